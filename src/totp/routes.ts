import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { AuthService } from '../core/auth.js'
import { reasons } from '../errors/reasons.js'
import { badRequest, unauthorized } from '../errors/status.js'
import { refuseOtherMethods } from '../http/methods.js'
import { errorResponses, StatusMessageSchema, StepUpBodySchema, TokenParamsSchema, TotpCodeBodySchema, TotpEnrollmentSchema, TotpRemoveBodySchema } from '../core/schemas.js'
import type { UserRecord, UserStore } from '../core/stores/user-store.js'
import type { SecondFactor } from './second-factor.js'
import { clientOf } from '../core/routes/client-context.js'
import { routeToken } from '../core/routes/presented-token.js'

export interface TotpRoutesOptions {
  auth: AuthService
  secondFactor: SecondFactor
  users: Pick<UserStore, 'findByUsername'>
}

const CALLER = 'The caller\'s Login token (token parameter, Authorization: Bearer or the AuthToken1 cookie).'

/** The caller's own second factor: POST /auth/totp, POST /auth/totp/confirm, DELETE /auth/totp. */
export const totpRoutes: FastifyPluginAsyncTypebox<TotpRoutesOptions> = async (app, { auth, secondFactor, users }) => {
  const tags = ['sessions']

  /** The token's account as it is now; the name given to another account since (deleted, made again): not yours. */
  async function holderAccount (token: string | undefined): Promise<UserRecord> {
    const holder = await auth.authenticate(token)
    const account = await users.findByUsername(holder.username)
    if (account === null || account.id !== holder.accountId) throw unauthorized()
    return account
  }

  app.post('/auth/totp', {
    schema: {
      tags,
      summary: 'Begin TOTP enrollment, with the current password: a secret, its otpauth:// URI and ten recovery codes (active once confirmed)',
      description: `${CALLER} And current_password in a form or JSON body: a factor outlives the token, so a token alone cannot add one ` +
        '(missing: 400; wrong: 401 with status 701, counted as a failed Login). Again before confirming: a new secret replaces the waiting one. With a factor active: 409.',
      querystring: TokenParamsSchema,
      body: StepUpBodySchema,
      response: { 200: TotpEnrollmentSchema, ...errorResponses(reasons.required('current_password'), 401, 403, 404, 405, 413, 415, 429, 503), 409: StatusMessageSchema }
    }
  }, async (request) => {
    const currentPassword = request.body?.current_password
    if (currentPassword === undefined) throw badRequest(reasons.required('current_password'))
    const client = clientOf(request)
    const account = await auth.stepUp({ token: routeToken(request), currentPassword, client })
    const enrollment = await secondFactor.begin(account, { clientIp: client.ip, userAgent: client.userAgent })
    return { status: 0 as const, message: 'Success' as const, secret: enrollment.secret, otpauth_uri: enrollment.otpauthUri, recovery_codes: enrollment.recoveryCodes }
  })

  app.post('/auth/totp/confirm', {
    schema: {
      tags,
      summary: 'Confirm TOTP enrollment with a code of the authenticator app: the factor is active from now on',
      description: `${CALLER} A code that does not match: 400 (the enrollment still waits).`,
      querystring: TokenParamsSchema,
      body: TotpCodeBodySchema,
      response: { 200: StatusMessageSchema, ...errorResponses(reasons.codeNotMatching(), 403, 404, 405, 413, 415, 503), 409: StatusMessageSchema }
    }
  }, async (request) => {
    const { code } = request.body
    if (code === undefined || code === '') throw badRequest(reasons.required('code'))
    const account = await holderAccount(routeToken(request))
    const client = clientOf(request)
    await secondFactor.confirm(account, code, { clientIp: client.ip, userAgent: client.userAgent })
    return { status: 0 as const, message: 'Success' as const }
  })

  app.delete('/auth/totp', {
    schema: {
      tags,
      summary: 'Remove the caller\'s second factor, with the current password and a code (or a recovery code)',
      description: `${CALLER} Both are checked as Login checks them: a wrong one is a 401 with status 701, counted toward the lockout.`,
      querystring: TokenParamsSchema,
      body: TotpRemoveBodySchema,
      response: { 200: StatusMessageSchema, ...errorResponses(reasons.required('current_password'), 401, 403, 404, 405, 413, 415, 429, 503) }
    }
  }, async (request) => {
    const { current_password: currentPassword, code } = request.body
    if (currentPassword === undefined) throw badRequest(reasons.required('current_password'))
    await auth.removeSecondFactor({ token: routeToken(request), currentPassword, code, client: clientOf(request) })
    return { status: 0 as const, message: 'Success' as const }
  })

  refuseOtherMethods(app, '/auth/totp', ['POST', 'DELETE'])
  refuseOtherMethods(app, '/auth/totp/confirm', ['POST'])
}
