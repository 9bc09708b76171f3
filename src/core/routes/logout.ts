import fastifyCookie from '@fastify/cookie'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AuthService } from '../auth.js'
import type { CookieSettings } from '../../config/parts/http.js'
import { reasons } from '../../errors/reasons.js'
import { SUCCESS } from '../../errors/status.js'
import { errorResponses, SuccessSchema, TokenParamsSchema, TokenPathSchema } from '../schemas.js'
import { tokenCookieOptions } from '../../http/cookie.js'
import { cookieToken } from '@auth-token-service/protocol/token-source'
import { refuseOtherMethods } from '../../http/methods.js'
import { TOKEN_COOKIE } from '@auth-token-service/protocol/token'
import { clientOf } from './client-context.js'
import { routeToken } from './presented-token.js'

export interface LogoutRoutesOptions {
  auth: AuthService
  /** The cookie's attributes, to clear it as it was set. */
  config: CookieSettings
}

/** POST /auth/Logout[/{token}]: ends an active token at once. */
export const logoutRoutes: FastifyPluginAsyncTypebox<LogoutRoutesOptions> = async (app, { auth, config }) => {
  // The cookie plugin's hooks run only in this scope: the routes that set or clear the cookie.
  await app.register(fastifyCookie)
  const cookie = tokenCookieOptions(config)
  const response = { 200: SuccessSchema, ...errorResponses(reasons.givenMoreThanOnce('token'), 403, 404, 405, 413, 415, 503) }
  const docs = {
    tags: ['tokens'],
    summary: 'Logout: end a token now',
    description: 'The token from the path, the token parameter, Authorization: Bearer or the AuthToken1 cookie, in that order. Ends it at once for every instance ' +
      'and clears the cookie when the cookie held it; an already ended, expired or unknown token is a 403.'
  }

  async function answer (request: FastifyRequest, reply: FastifyReply) {
    // Path, then `token` parameter, then Bearer, then the cookie (contract).
    const token = routeToken(request)
    await auth.logout(token, clientOf(request))
    // The cookie held the ended token: clear it, with the attributes it was set with.
    if (token !== undefined && cookieToken(request.headers.cookie) === token) reply.clearCookie(TOKEN_COOKIE, cookie)
    return SUCCESS
  }

  app.post('/auth/Logout', {
    schema: { ...docs, querystring: TokenParamsSchema, body: TokenParamsSchema, response }
  }, async (request, reply) => await answer(request, reply))
  app.post('/auth/Logout/:token', {
    schema: { ...docs, params: TokenPathSchema, querystring: TokenParamsSchema, response }
  }, async (request, reply) => await answer(request, reply))
  refuseOtherMethods(app, '/auth/Logout', ['POST'])
  refuseOtherMethods(app, '/auth/Logout/:token', ['POST'])
}
