import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { AuthService } from '../auth.js'
import { reasons } from '../../errors/reasons.js'
import { refuseOtherMethods } from '../../http/methods.js'
import { badRequest } from '../../errors/status.js'
import { errorResponses, forbiddenAnswer, PasswordChangeBodySchema, SessionsEndedSchema, TokenParamsSchema } from '../schemas.js'
import { clientOf } from './client-context.js'
import { routeToken } from './presented-token.js'

export interface PasswordRoutesOptions {
  auth: AuthService
}

/** POST /auth/Password: the caller changes their own password. */
export const passwordRoutes: FastifyPluginAsyncTypebox<PasswordRoutesOptions> = async (app, { auth }) => {
  app.post('/auth/Password', {
    schema: {
      tags: ['sessions'],
      summary: 'Change the caller\'s own password',
      description: 'The caller\'s token (token parameter, Authorization: Bearer or the AuthToken1 cookie), current_password and ' +
        'new_password in a form or JSON body (never the query string). The current password is checked as Login checks it: a wrong ' +
        'one is a 401 with status 701 and counts as a failed Login, toward the same lockout. The new one must pass the password ' +
        'policy (400 with detail). On success every other session of the account ends; the caller\'s stays. Federated accounts: 403.',
      querystring: TokenParamsSchema,
      body: PasswordChangeBodySchema,
      response: {
        200: SessionsEndedSchema,
        ...errorResponses(reasons.passwordTooShort(8, 'new_password'), 401, 403, 404, 405, 413, 415, 429, 503),
        403: forbiddenAnswer('a federated account (the directory owns its password)', reasons.federatedPassword())
      }
    }
  }, async (request) => {
    const { current_password: currentPassword, new_password: newPassword } = request.body
    if (currentPassword === undefined) throw badRequest(reasons.required('current_password'))
    if (newPassword === undefined) throw badRequest(reasons.required('new_password'))
    const { ended } = await auth.changePassword({ token: routeToken(request), currentPassword, newPassword, client: clientOf(request) })
    return { status: 0 as const, message: 'Success' as const, ended }
  })
  refuseOtherMethods(app, '/auth/Password', ['POST'])
}
