import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { AuthService } from '../core/auth.js'
import type { ApiKeySettings } from '../config/parts/api-keys.js'
import type { TotpSettings } from '../config/parts/totp.js'
import { reasons } from '../errors/reasons.js'
import { StatusError } from '../errors/status.js'
import { refuseOtherMethods } from '../http/methods.js'
import type { ApiKeys } from '../api-keys/api-keys.js'
import type { Sessions } from '../sessions/sessions.js'
import { accountPage, ACCOUNT_PATH, newKeyPage, totpEnrollmentPage } from './account-pages.js'
import { clientName, instant, tooManyAttempts } from './display.js'
import type { Notice } from './pages.js'
import type { PasskeyStore } from './passkey-store.js'
import type { UserRecord, UserStore } from '../core/stores/user-store.js'
import { otpauthUri } from '../totp/rfc6238.js'
import type { SecondFactor } from '../totp/second-factor.js'
import { hashToken } from '@auth-token-service/guard/token'
import type { TokenRecord } from '@auth-token-service/guard/layout'
import { clientOf } from '../core/routes/client-context.js'

/**
 * The account page's actions: plain forms posted to /auth/account/…, each an adapter of the
 * operation the JSON routes use (sessions, auth.changePassword, auth.stepUp, secondFactor,
 * apiKeys), never a second implementation. What changes nothing secret answers 303 back to the
 * page with a notice (Post/Redirect/Get); what shows a secret once (a second factor's key and
 * recovery codes, a new API key) is a page of its own, never cached (every /auth answer is
 * no-store). What outlives the token asks for the password again, as the contract's JSON routes do.
 */

export interface SignedIn {
  token: string
  record: TokenRecord
}

export interface AccountRoutesDeps {
  auth: AuthService
  config: Pick<ApiKeySettings, 'apiKeyMaxDays'> & Pick<TotpSettings, 'totpIssuer'>
  sessions: Sessions
  passkeys: PasskeyStore
  apiKeys: ApiKeys
  secondFactor: SecondFactor
  users: Pick<UserStore, 'findByUsername'>
  /** The browser's active Login token and its record, or undefined. */
  signedIn: (request: FastifyRequest) => Promise<SignedIn | undefined>
  /** An HTML answer with the pages' headers (CSP, frame and referrer rules). */
  page: (reply: FastifyReply, status: number, body: string) => FastifyReply
  brandOf: (request: FastifyRequest) => string
  /** The browser's own session ended: its cookie goes. */
  clearToken: (reply: FastifyReply) => void
}

/** What a redirect back to the page says: a fixed word in the URL, never text of the request. */
const DONE = {
  'session-ended': 'The session was ended.',
  'sessions-ended': 'Your other sessions were signed out.',
  'password-changed': 'Your password was changed. Your other sessions were signed out.',
  'totp-on': 'Two-step verification is on.',
  'totp-off': 'Two-step verification is off.',
  'key-revoked': 'The API key was revoked.',
  'passkey-removed': 'The passkey was removed.'
} as const
export type Done = keyof typeof DONE

/** The notice a `done` parameter names, or undefined. */
export function doneNotice (rawUrl: string): Notice | undefined {
  const mark = rawUrl.indexOf('?')
  if (mark < 0) return undefined
  const done = new URLSearchParams(rawUrl.slice(mark + 1)).get('done')
  return done !== null && Object.hasOwn(DONE, done) ? { kind: 'info', text: DONE[done as Done] } : undefined
}

const back = async (reply: FastifyReply, done: Done, section: string): Promise<FastifyReply> =>
  await reply.code(303).header('location', `/auth/signin?done=${done}#${section}`).send()

const MESSAGES = {
  wrongPassword: 'That password is not right.',
  wrongPasswordOrCode: 'The password or the code is not right.',
  wrongCode: 'That code is not right. Enter the code the app shows now.',
  passwordsDiffer: 'The two new passwords are not the same.',
  required: 'Fill in every field of the form.',
  federated: 'Your password is kept by your organisation\'s directory: change it there.',
  sessionGone: 'That session had already ended.',
  keyGone: 'That key had already been revoked, or is not yours.',
  totpActive: 'Two-step verification is already on.',
  totpNotActive: 'Two-step verification is not on.',
  notPending: 'Start the set-up again: nothing waits for a code.',
  unavailable: 'That could not be done right now. Try again in a moment.',
  crossSite: 'This request did not come from this site\'s own page: nothing was changed.'
} as const

/** A refusal's 400 detail as a person reads it (the JSON routes' detail names fields). */
function personal (detail: string): string {
  const text = detail
    .replace(/^new_password /, 'The new password ')
    .replace(/^expires_in_days /, 'The number of days ')
    .replace(/^name /, 'The key name ')
    .replace(/ \(AUTH_API_KEYS_PER_ACCOUNT\)$/, '')
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}.`
}

/** What a refused action tells the person, by the error the operation threw. */
function noticeFor (error: StatusError, wrong: string = MESSAGES.wrongPassword): Notice {
  const text = error.status === 701
    ? wrong
    : error.status === 429
      ? tooManyAttempts(error.headers['retry-after'])
      : error.status === 503
        ? MESSAGES.unavailable
        : error.status === 403 && error.detail === reasons.crossSiteRequest()
          ? MESSAGES.crossSite
          : error.status === 403 && error.detail === reasons.federatedPassword()
            ? MESSAGES.federated
            : error.status === 409
              ? MESSAGES.totpActive
              : error.detail !== undefined
                ? personal(error.detail)
                : MESSAGES.required
  return { kind: 'error', text }
}

/** The HTTP status a refused page answers with: the operation's own (701 is a 401, as at Login). */
const statusOf = (error: StatusError): number => error.httpStatus

function field (body: unknown, name: string): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined
  const value = (body as Record<string, unknown>)[name]
  return typeof value === 'string' ? value : undefined
}

export interface AccountPages {
  /** The account page, as it is now. */
  view: (request: FastifyRequest, reply: FastifyReply, current: SignedIn, message?: Notice, status?: number) => Promise<FastifyReply>
  /** A refusal made before an action's handler ran, as the account page; undefined when not signed in. */
  refusal: (request: FastifyRequest, reply: FastifyReply, error: StatusError) => Promise<FastifyReply | undefined>
}

export function registerAccountRoutes (pages: FastifyInstance, deps: AccountRoutesDeps): AccountPages {
  const { auth, config, sessions, passkeys, apiKeys, secondFactor, users, signedIn, page, brandOf } = deps

  /** The account page, as it is now. */
  async function view (request: FastifyRequest, reply: FastifyReply, current: SignedIn, message?: Notice, status = 200): Promise<FastifyReply> {
    const { record } = current
    const [list, keys, active, keyPage] = await Promise.all([
      sessions.list(record.accountId, hashToken(current.token)),
      passkeys.listByAccount(record.accountId),
      secondFactor.isActive(record.accountId),
      apiKeys.page(record.accountId, undefined, 100)
    ])
    return page(reply, status, accountPage({
      brand: brandOf(request),
      username: record.username,
      expires: instant(record.expiresAt),
      federated: record.federated,
      message,
      sessions: list.map((session) => ({
        id: session.id,
        created: instant(session.created),
        expires: instant(session.expiresAt),
        ip: session.ip,
        client: clientName(session.userAgent),
        current: session.current
      })),
      passkeys: keys.map((key) => ({
        id: key.id,
        name: key.name,
        created: instant(key.createdAt.getTime()),
        lastUsed: key.lastUsedAt === null ? undefined : instant(key.lastUsedAt.getTime())
      })),
      totpActive: active,
      keys: keyPage.keys.map((key) => ({
        id: key.id,
        name: key.name,
        created: instant(key.createdAt.getTime()),
        expires: instant(key.expiresAt.getTime()),
        lastUsed: key.lastUsedAt === null ? undefined : instant(key.lastUsedAt.getTime())
      })),
      moreKeys: keyPage.next !== undefined,
      keyDefaultDays: Math.min(90, config.apiKeyMaxDays),
      keyMaxDays: config.apiKeyMaxDays
    }))
  }

  /**
   * An action of the signed-in person: without an active token, back to the sign-in page; a
   * refusal (a wrong password, a limit, a backend, the cross-site rule) is the account page
   * with a message and the operation's status.
   */
  function action (path: string, handler: (request: FastifyRequest, reply: FastifyReply, current: SignedIn) => Promise<FastifyReply>, wrong?: string): void {
    pages.post(`${ACCOUNT_PATH}${path}`, { schema: { hide: true } }, async (request, reply) => {
      const current = await signedIn(request)
      if (current === undefined) return await reply.code(303).header('location', '/auth/signin').send()
      try {
        return await handler(request, reply, current)
      } catch (error) {
        if (!(error instanceof StatusError) || error.status === 500) throw error
        reply.headers(error.headers)
        // The token may have ended under the action (a password change elsewhere): sign in again.
        const still = await signedIn(request)
        if (still === undefined) return await reply.code(303).header('location', '/auth/signin').send()
        return await view(request, reply, still, noticeFor(error, wrong), statusOf(error))
      }
    })
  }

  const actor = (request: FastifyRequest): { clientIp: string, userAgent: string | undefined } => {
    const client = clientOf(request)
    return { clientIp: client.ip, userAgent: client.userAgent }
  }
  // A page's own refusal (a form left half-filled): shown with its text, as a 400.
  const say = async (request: FastifyRequest, reply: FastifyReply, current: SignedIn, text: string, status = 400): Promise<FastifyReply> =>
    await view(request, reply, current, { kind: 'error', text }, status)

  /** The token's account as it is now; the name given to another account since: not yours. */
  async function holderAccount (record: TokenRecord): Promise<UserRecord | undefined> {
    const account = await users.findByUsername(record.username)
    return account === null || account.id !== record.accountId ? undefined : account
  }

  action('/sessions/end-others', async (request, reply, current) => {
    await sessions.endAll(current.record.accountId, clientOf(request), hashToken(current.token))
    return await back(reply, 'sessions-ended', 'sessions-section')
  })

  action('/sessions/:id/end', async (request, reply, current) => {
    const { id } = request.params as { id: string }
    if (!await sessions.end(current.record.accountId, id, clientOf(request))) return await say(request, reply, current, MESSAGES.sessionGone, 403)
    // This browser's own session (no button offers it, a crafted form may): its cookie goes too.
    if (await signedIn(request) === undefined) {
      deps.clearToken(reply)
      return await reply.code(303).header('location', '/auth/signin').send()
    }
    return await back(reply, 'session-ended', 'sessions-section')
  })

  action('/password', async (request, reply, current) => {
    if (current.record.federated) return await say(request, reply, current, MESSAGES.federated, 403)
    const currentPassword = field(request.body, 'current_password') ?? ''
    const newPassword = field(request.body, 'new_password') ?? ''
    if (currentPassword === '' || newPassword === '') return await say(request, reply, current, MESSAGES.required)
    if (field(request.body, 'confirm_password') !== newPassword) return await say(request, reply, current, MESSAGES.passwordsDiffer)
    await auth.changePassword({ token: current.token, currentPassword, newPassword, client: clientOf(request) })
    return await back(reply, 'password-changed', 'password-section')
  })

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

  for (const path of ['/sessions/end-others', '/sessions/:id/end', '/password', '/totp', '/totp/confirm', '/totp/remove', '/keys', '/keys/:id/revoke']) {
    refuseOtherMethods(pages, `${ACCOUNT_PATH}${path}`, ['POST'])
  }

  /** A refusal before the handler (the cross-site rule): the page with its message when signed in. */
  async function refusal (request: FastifyRequest, reply: FastifyReply, error: StatusError): Promise<FastifyReply | undefined> {
    const current = await signedIn(request)
    if (current === undefined) return undefined
    reply.headers(error.headers)
    return await view(request, reply, current, noticeFor(error), error.httpStatus)
  }

  return { view, refusal }
}
