import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AuthService } from '../core/auth.js'
import type { Config } from '../config/config.js'
import { reasons } from '../errors/reasons.js'
import { StatusError } from '../errors/status.js'
import type { ApiKeys } from '../api-keys/index.js'
import type { Sessions } from '../sessions/index.js'
import { newKeyPage, totpEnrollmentPage } from './account-pages.js'
import { back, MESSAGES } from './account-notices.js'
import { instant } from './display.js'
import type { UserRecord, UserStore } from '../core/stores/user-store.js'
import { otpauthUri, type SecondFactor } from '../totp/index.js'
import { hashToken } from '@auth-token-service/protocol/token'
import type { TokenRecord } from '@auth-token-service/protocol/layout'
import { clientOf } from '../core/routes/client-context.js'
import { field, type SignedIn, type SignInContext } from './page-context.js'

/**
 * The account page's actions, a section each: sessions, password, two-step verification, API
 * keys. Each adapts the operation the JSON routes use; account-routes.ts wraps them (signed in,
 * refusals shown on the page).
 */

export type ActionHandler = (request: FastifyRequest, reply: FastifyReply, current: SignedIn) => Promise<FastifyReply>

export interface AccountActionKit {
  /**
   * POST /auth/account{path} for the signed-in person; a refusal it throws is the account page
   * with its message (`wrong`: what a 701 says).
   */
  action (path: string, handler: ActionHandler, wrong?: string): void
  /** A page's own refusal (a form left half-filled): the account page with its text, as a 400 (or `status`). */
  say (request: FastifyRequest, reply: FastifyReply, current: SignedIn, text: string, status?: number): Promise<FastifyReply>
  page: SignInContext['page']
  brandOf: SignInContext['brandOf']
}

const actor = (request: FastifyRequest): { clientIp: string, userAgent: string | undefined } => {
  const client = clientOf(request)
  return { clientIp: client.ip, userAgent: client.userAgent }
}

export interface SessionActionsDeps {
  sessions: Pick<Sessions, 'end' | 'endAll'>
  signedIn: SignInContext['signedIn']
  /** The browser's own session ended: its cookie goes. */
  clearToken: (reply: FastifyReply) => void
}

export function registerSessionActions ({ action, say }: AccountActionKit, { sessions, signedIn, clearToken }: SessionActionsDeps): void {
  action('/sessions/end-others', async (request, reply, current) => {
    await sessions.endAll(current.record.accountId, clientOf(request), hashToken(current.token))
    return await back(reply, 'sessions-ended', 'sessions-section')
  })

  action('/sessions/:id/end', async (request, reply, current) => {
    const { id } = request.params as { id: string }
    if (!await sessions.end(current.record.accountId, id, clientOf(request))) return await say(request, reply, current, MESSAGES.sessionGone, 403)
    // This browser's own session (no button offers it, a crafted form may): its cookie goes too.
    if (await signedIn(request) === undefined) {
      clearToken(reply)
      return await reply.code(303).header('location', '/auth/signin').send()
    }
    return await back(reply, 'session-ended', 'sessions-section')
  })
}

export function registerPasswordAction ({ action, say }: AccountActionKit, auth: Pick<AuthService, 'changePassword'>): void {
  action('/password', async (request, reply, current) => {
    if (current.record.federated) return await say(request, reply, current, MESSAGES.federated, 403)
    const currentPassword = field(request.body, 'current_password') ?? ''
    const newPassword = field(request.body, 'new_password') ?? ''
    if (currentPassword === '' || newPassword === '') return await say(request, reply, current, MESSAGES.required)
    if (field(request.body, 'confirm_password') !== newPassword) return await say(request, reply, current, MESSAGES.passwordsDiffer)
    await auth.changePassword({ token: current.token, currentPassword, newPassword, client: clientOf(request) })
    return await back(reply, 'password-changed', 'password-section')
  })
}

export interface TotpActionsDeps {
  auth: Pick<AuthService, 'stepUp' | 'removeSecondFactor'>
  config: Pick<Config, 'totpIssuer'>
  secondFactor: Pick<SecondFactor, 'begin' | 'confirm'>
  users: Pick<UserStore, 'findByUsername'>
}

export function registerTotpActions ({ action, say, page, brandOf }: AccountActionKit, { auth, config, secondFactor, users }: TotpActionsDeps): void {
  /** The token's account as it is now; the name given to another account since: not yours. */
  async function holderAccount (record: TokenRecord): Promise<UserRecord | undefined> {
    const account = await users.findByUsername(record.username)
    return account === null || account.id !== record.accountId ? undefined : account
  }

  action('/totp', async (request, reply, current) => {
    const currentPassword = field(request.body, 'current_password') ?? ''
    if (currentPassword === '') return await say(request, reply, current, MESSAGES.required)
    const account = await auth.stepUp({ token: current.token, currentPassword, client: clientOf(request) })
    const enrollment = await secondFactor.begin(account, actor(request))
    return page(reply, 200, totpEnrollmentPage({
      brand: brandOf(request),
      username: account.username,
      secret: enrollment.secret,
      otpauthUri: enrollment.otpauthUri,
      recoveryCodes: enrollment.recoveryCodes
    }))
  })

  action('/totp/confirm', async (request, reply, current) => {
    const code = field(request.body, 'code')?.trim() ?? ''
    // The key the page showed, posted back so that a wrong code can show it again: it is only
    // drawn, never trusted; the code is checked against the secret the service keeps.
    const shown = field(request.body, 'secret') ?? ''
    const account = await holderAccount(current.record)
    if (account === undefined) return await reply.code(303).header('location', '/auth/signin').send()
    try {
      if (code === '') throw new StatusError(400, 'Bad Request', 400)
      await secondFactor.confirm(account, code, actor(request))
    } catch (error) {
      if (!(error instanceof StatusError) || error.status !== 400 || !/^[A-Z2-7]{16,128}$/.test(shown)) throw error
      if (error.detail !== undefined && error.detail !== reasons.codeNotMatching()) return await say(request, reply, current, MESSAGES.notPending)
      return page(reply, 400, totpEnrollmentPage({
        brand: brandOf(request),
        username: account.username,
        secret: shown,
        otpauthUri: otpauthUri(shown, config.totpIssuer, account.username),
        recoveryCodes: undefined,
        message: { kind: 'error', text: MESSAGES.wrongCode }
      }))
    }
    return await back(reply, 'totp-on', 'totp-section')
  })

  action('/totp/remove', async (request, reply, current) => {
    const currentPassword = field(request.body, 'current_password') ?? ''
    const code = field(request.body, 'code')?.trim() ?? ''
    if (currentPassword === '' || code === '') return await say(request, reply, current, MESSAGES.required)
    try {
      await auth.removeSecondFactor({ token: current.token, currentPassword, code, client: clientOf(request) })
    } catch (error) {
      if (error instanceof StatusError && error.status === 400 && error.detail === reasons.totpNotActive()) return await say(request, reply, current, MESSAGES.totpNotActive)
      throw error
    }
    return await back(reply, 'totp-off', 'totp-section')
  }, MESSAGES.wrongPasswordOrCode)
}

export interface KeyActionsDeps {
  auth: Pick<AuthService, 'stepUp'>
  config: Pick<Config, 'apiKeyMaxDays'>
  apiKeys: Pick<ApiKeys, 'create' | 'revoke'>
}

export function registerKeyActions ({ action, say, page, brandOf }: AccountActionKit, { auth, config, apiKeys }: KeyActionsDeps): void {
  action('/keys', async (request, reply, current) => {
    const name = field(request.body, 'name')?.trim() ?? ''
    const days = field(request.body, 'expires_in_days')?.trim() ?? ''
    const currentPassword = field(request.body, 'current_password') ?? ''
    if (name === '' || currentPassword === '') return await say(request, reply, current, MESSAGES.required)
    // A form's number is text: a whole number of days, its range checked by apiKeys.create.
    if (!/^[0-9]{1,5}$/.test(days)) return await say(request, reply, current, `The number of days must be a whole number from 1 to ${config.apiKeyMaxDays}.`)
    const account = await auth.stepUp({ token: current.token, currentPassword, client: clientOf(request) })
    const { key, secret } = await apiKeys.create(account, name, Number(days), actor(request))
    return page(reply, 200, newKeyPage({ brand: brandOf(request), name: key.name, expires: instant(key.expiresAt.getTime()), secret }))
  })

  action('/keys/:id/revoke', async (request, reply, current) => {
    const { id } = request.params as { id: string }
    try {
      await apiKeys.revoke(id, actor(request), current.record.accountId)
    } catch (error) {
      if (error instanceof StatusError && error.httpStatus === 404) return await say(request, reply, current, MESSAGES.keyGone, 403)
      throw error
    }
    return await back(reply, 'key-revoked', 'keys-section')
  })
}
