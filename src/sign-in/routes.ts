import fastifyCookie from '@fastify/cookie'
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { randomBytes } from 'node:crypto'
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server'
import type { AuthService, ClientContext, IssuedToken } from '../core/auth.js'
import type { Config } from '../config/config.js'
import { badRequest, SecondFactorRequired, SignInEnded, StatusError, type HeldSignIn } from '../errors/status.js'
import { reasons } from '../errors/reasons.js'
import { limitPerClient } from '../core/routes/client-limit.js'
import { tokenCookieOptions } from '../http/cookie.js'
import { ownOrigin } from '../http/cross-site.js'
import { refuseOtherMethods } from '../http/methods.js'
import type { Sessions } from '../sessions/sessions.js'
import { ASSET_PATH, codeStepPage, signInPage, signOutPage, type Notice } from './pages.js'
import { CLIENT_SCRIPT, ICON, STYLESHEET, webauthnBrowserBundle } from './assets.js'
import { createPasskeyCeremonies, type RelyingParty } from './passkeys.js'
import { redirectParameter, safeRedirect } from './redirect.js'
import type { PasskeyStore } from './passkey-store.js'
import type { PendingStore } from './pending-store.js'
import type { RequestLimiter } from '../core/stores/request-limiter.js'
import type { UserRecord, UserStore } from '../core/stores/user-store.js'
import { clientName, tooManyAttempts } from './display.js'
import type { ApiKeys } from '../api-keys/api-keys.js'
import type { SecondFactor } from '../totp/second-factor.js'
import { doneNotice, registerAccountRoutes, type AccountPages } from './account-routes.js'
import { cookieToken } from '@auth-token-service/protocol/token-source'
import { TOKEN_COOKIE } from '@auth-token-service/protocol/token'
import type { TokenRecord } from '@auth-token-service/protocol/layout'
import { clientOf } from '../core/routes/client-context.js'

/** The second factor's check of a code (TOTP); absent, no code is ever accepted. */
export interface SecondFactorCheck {
  verify (account: UserRecord, otp: string, client: ClientContext): Promise<boolean>
}

export interface SignInRoutesOptions {
  auth: AuthService
  config: Config
  sessions: Sessions
  passkeys: PasskeyStore
  pending: PendingStore
  /** The per-client limit of the routes anyone may call before signing in (passkey options and answer, the code step). */
  preSignIn: RequestLimiter
  secondFactor?: SecondFactorCheck | undefined
  /** What the account page acts through: the services the JSON routes use. */
  account: {
    apiKeys: ApiKeys
    secondFactor: SecondFactor
    users: Pick<UserStore, 'findByUsername'>
  }
}

/**
 * The sign-in waiting for its code: the account whose password was right, with its revocation
 * epoch as read then, held server-side (never the password).
 */
const PENDING_COOKIE = 'AuthPending1'
const PENDING_TTL_MS = 5 * 60_000
const PENDING_PATH = '/auth/signin'

/** A held record without its epoch (a shape that predates it) ends as an expired one does. */
function heldSignIn (raw: string): HeldSignIn | undefined {
  const held = JSON.parse(raw) as Partial<HeldSignIn>
  return typeof held.accountId === 'string' && typeof held.username === 'string' && typeof held.tokenEpoch === 'number'
    ? { accountId: held.accountId, username: held.username, tokenEpoch: held.tokenEpoch }
    : undefined
}

/** Where a page's form and its answer may go: this origin, and the hosts `rd` may name. */
function contentSecurityPolicy (redirectAllowed: readonly string[]): string {
  // form-action holds for a form's redirect too: the hosts a sign-in may send the person back to.
  const targets = redirectAllowed.flatMap((rule) => rule.startsWith('.') ? [rule.slice(1), `*${rule}`] : [rule])
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "connect-src 'self'",
    `form-action 'self'${targets.map((host) => ` ${host}`).join('')}`,
    "frame-ancestors 'none'",
    "base-uri 'none'"
  ].join('; ')
}

const MESSAGES = {
  wrong: 'The username or password is not right.',
  wrongCode: 'That code is not right. Try again.',
  missing: 'Enter your username and password.',
  unavailable: 'Sign-in is unavailable right now. Try again in a moment.',
  expired: 'Your sign-in took too long. Enter your username and password again.',
  crossSite: 'This sign-in did not come from this site\'s own page. Sign in here.',
  signedOut: 'You are signed out.'
} as const

/** What a failed step tells the person; never the JSON body, never more than Login says. */
function noticeFor (error: StatusError): Notice {
  if (error.status === 701) return { kind: 'error', text: MESSAGES.wrong }
  if (error.status === 429) return { kind: 'error', text: tooManyAttempts(error.headers['retry-after']) }
  if (error.status === 503) return { kind: 'error', text: MESSAGES.unavailable }
  if (error.status === 403) return { kind: 'error', text: MESSAGES.crossSite }
  return { kind: 'error', text: MESSAGES.missing }
}

function field (body: unknown, name: string): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined
  const value = (body as Record<string, unknown>)[name]
  return typeof value === 'string' ? value : undefined
}

/**
 * The browser sign-in: GET/POST /auth/signin (the code step at /auth/signin/code), GET/POST
 * /auth/signout, the passkey ceremonies, and the pages' own style and scripts. Every step is
 * the domain's Login (AuthService), so the limits, events, lifetime and audit are Login's.
 */
export const signInRoutes: FastifyPluginAsync<SignInRoutesOptions> = async (app, options) => {
  const { auth, config, sessions, passkeys, pending, preSignIn, secondFactor } = options
  /** Whose sign-in this is: the setting, or the host name the browser asked for. */
  const brandOf = (request: FastifyRequest): string => config.signinTitle ?? request.hostname.replace(/:\d+$/, '').replace(/^\[|\]$/g, '')
  await app.register(fastifyCookie)
  const cookie = tokenCookieOptions(config)
  const pendingCookie = { ...cookie, path: PENDING_PATH, sameSite: 'strict' as const }
  const csp = contentSecurityPolicy(config.redirectAllowed)
  const ceremonies = createPasskeyCeremonies({ auth, passkeys, pending })
  const webauthnBundle = webauthnBrowserBundle()

  function page (reply: FastifyReply, status: number, body: string): FastifyReply {
    return reply.code(status)
      .header('content-type', 'text/html; charset=utf-8')
      .header('content-security-policy', csp)
      .header('x-frame-options', 'DENY')
      .header('x-content-type-options', 'nosniff')
      // Not no-referrer: under it a browser sends `Origin: null` with the form's POST, which the
      // login-CSRF rule (http/cross-site.ts) rightly refuses. same-origin sends the Origin (and a
      // Referer) to this origin only; no other site ever learns the page's URL.
      .header('referrer-policy', 'same-origin')
      .send(body)
  }

  const redirectOf = (request: FastifyRequest, rd: string | undefined): string | undefined =>
    safeRedirect(rd, ownOrigin(request), config.redirectAllowed)

  /** The browser's own token (the cookie only: a page never sees a Bearer header), or undefined. */
  const browserToken = (request: FastifyRequest): string | undefined => {
    const token = cookieToken(request.headers.cookie)
    return typeof token === 'string' ? token : undefined
  }

  async function signedIn (request: FastifyRequest): Promise<{ token: string, record: TokenRecord } | undefined> {
    const token = browserToken(request)
    if (token === undefined) return undefined
    try {
      return { token, record: await auth.authenticate(token) }
    } catch (error) {
      if (error instanceof StatusError && error.status === 403) return undefined
      throw error
    }
  }

  function setToken (reply: FastifyReply, issued: IssuedToken): void {
    reply.setCookie(TOKEN_COOKIE, issued.token, {
      ...cookie,
      expires: new Date(issued.expiresAt),
      maxAge: Math.max(0, Math.floor((issued.expiresAt - Date.now()) / 1000))
    })
  }

  /** After a sign-in: back where the person was going, or to the signed-in page. */
  function done (request: FastifyRequest, reply: FastifyReply, issued: IssuedToken, rd: string | undefined): FastifyReply {
    setToken(reply, issued)
    return reply.code(303).header('location', redirectOf(request, rd) ?? '/auth/signin').send()
  }

  let account: AccountPages | undefined

  function relyingParty (request: FastifyRequest): RelyingParty {
    const own = ownOrigin(request)
    return {
      id: config.webauthnRpId ?? request.hostname.replace(/:\d+$/, '').replace(/^\[|\]$/g, ''),
      origins: config.webauthnOrigins.length > 0 ? config.webauthnOrigins : own === undefined ? [] : [own]
    }
  }

  // The pages' files: the CSP's 'self' scripts and style.
  await app.register(async (assets: FastifyInstance) => {
    const serve = (path: string, type: string, body: string): void => {
      assets.get(`${ASSET_PATH}/${path}`, { schema: { hide: true } }, async (_request, reply) =>
        await reply.header('content-type', type).header('x-content-type-options', 'nosniff').send(body))
      refuseOtherMethods(assets, `${ASSET_PATH}/${path}`, ['GET'])
    }
    serve('signin.css', 'text/css; charset=utf-8', STYLESHEET)
    serve('signin.js', 'text/javascript; charset=utf-8', CLIENT_SCRIPT)
    serve('webauthn.js', 'text/javascript; charset=utf-8', webauthnBundle)
    serve('icon.svg', 'image/svg+xml', ICON)
    // Browsers ask for /favicon.ico of any page without a link to an icon (the JSON answers too).
    assets.get('/favicon.ico', { schema: { hide: true } }, async (_request, reply) =>
      await reply.header('content-type', 'image/svg+xml').header('x-content-type-options', 'nosniff').send(ICON))
    refuseOtherMethods(assets, '/favicon.ico', ['GET'])
  })

  // The HTML steps: a refusal of any of them (a cross-site post, a limit, a backend) is a page with a message.
  await app.register(async (pages: FastifyInstance) => {
    pages.setErrorHandler(async (error, request, reply) => {
      if (!(error instanceof StatusError) || error.status === 500) throw error
      if (request.url.startsWith('/auth/account/') && account !== undefined) {
        const shown = await account.refusal(request, reply, error)
        if (shown !== undefined) return shown
      }
      reply.headers(error.headers)
      return page(reply, error.httpStatus, signInPage({ brand: brandOf(request), rd: redirectOf(request, field(request.body, 'rd')), message: noticeFor(error) }))
    })

    account = registerAccountRoutes(pages, {
      auth,
      config,
      sessions,
      passkeys,
      ...options.account,
      signedIn,
      page,
      brandOf,
      clearToken: (reply) => { reply.clearCookie(TOKEN_COOKIE, cookie) }
    })

    pages.get('/auth/signin', { schema: { hide: true }, config: { ownQuery: true } }, async (request, reply) => {
      const rd = redirectOf(request, redirectParameter(request.url))
      const current = await signedIn(request)
      if (current === undefined) return page(reply, 200, signInPage({ brand: brandOf(request), rd }))
      // Already signed in: straight back where the person was going, or the account page.
      if (rd !== undefined) return await reply.code(303).header('location', rd).send()
      return await (account as AccountPages).view(request, reply, current, doneNotice(request.url))
    })
    refuseOtherMethods(pages, '/auth/signin', ['GET', 'POST'])

    pages.post('/auth/signin', { schema: { hide: true } }, async (request, reply) => {
      const username = field(request.body, 'username')
      const password = field(request.body, 'password')
      const rd = redirectOf(request, field(request.body, 'rd'))
      if (username === undefined || username === '' || password === undefined || password === '') {
        return page(reply, 400, signInPage({ brand: brandOf(request), rd, username, message: { kind: 'error', text: MESSAGES.missing } }))
      }
      try {
        const issued = await auth.login({ username, password, presentedToken: browserToken(request), client: clientOf(request) })
        // A code step left unfinished before this sign-in: its cookie goes (the record expires by itself).
        if (request.cookies[PENDING_COOKIE] !== undefined) reply.clearCookie(PENDING_COOKIE, pendingCookie)
        return done(request, reply, issued, rd)
      } catch (error) {
        if (!(error instanceof StatusError)) throw error
        if (error instanceof SecondFactorRequired) return await codeStep(request, reply, error.held, rd)
        reply.headers(error.headers)
        return page(reply, error.httpStatus, signInPage({ brand: brandOf(request), rd, username, message: noticeFor(error) }))
      }
    })

    /**
     * The password was right and the account has a second factor: the account (not the
     * password) is held server-side for five minutes under a random id in a cookie, and the
     * code step asks for the code.
     */
    async function codeStep (request: FastifyRequest, reply: FastifyReply, held: HeldSignIn, rd: string | undefined): Promise<FastifyReply> {
      const id = randomBytes(32).toString('base64url')
      await pending.put(`pending:${id}`, JSON.stringify(held), PENDING_TTL_MS)
      reply.setCookie(PENDING_COOKIE, id, { ...pendingCookie, maxAge: PENDING_TTL_MS / 1000 })
      return page(reply, 401, codeStepPage({ brand: brandOf(request), rd, username: held.username }))
    }

    // preHandler, after the body is read: the "Too many attempts" page keeps the form's `rd`.
    pages.post('/auth/signin/code', { schema: { hide: true }, preHandler: limitPerClient(preSignIn, 'code') }, async (request, reply) => {
      const rd = redirectOf(request, field(request.body, 'rd'))
      const id = request.cookies[PENDING_COOKIE]
      const raw = id === undefined || id === '' ? null : await pending.get(`pending:${id}`)
      const held = raw === null ? undefined : heldSignIn(raw)
      if (held === undefined) return page(reply, 401, signInPage({ brand: brandOf(request), rd, message: { kind: 'error', text: MESSAGES.expired } }))
      const otp = field(request.body, 'otp')?.trim() ?? ''
      if (otp === '') return page(reply, 400, codeStepPage({ brand: brandOf(request), rd, username: held.username, message: { kind: 'error', text: MESSAGES.wrongCode } }))
      const client = clientOf(request)
      try {
        const issued = await auth.loginProven({
          accountId: held.accountId,
          username: held.username,
          method: 'second-factor',
          tokenEpoch: held.tokenEpoch,
          presentedToken: browserToken(request),
          client,
          prove: async (account) => secondFactor !== undefined && await secondFactor.verify(account, otp, client)
        })
        await pending.delete(`pending:${id as string}`)
        reply.clearCookie(PENDING_COOKIE, pendingCookie)
        return done(request, reply, issued, rd)
      } catch (error) {
        if (!(error instanceof StatusError)) throw error
        if (error instanceof SignInEnded) {
          // The password changed, the sessions were revoked or the account disabled since: start again.
          await pending.delete(`pending:${id as string}`)
          reply.clearCookie(PENDING_COOKIE, pendingCookie)
          return page(reply, 401, signInPage({ brand: brandOf(request), rd, message: { kind: 'error', text: MESSAGES.expired } }))
        }
        reply.headers(error.headers)
        if (error.status === 701) return page(reply, 401, codeStepPage({ brand: brandOf(request), rd, username: held.username, message: { kind: 'error', text: MESSAGES.wrongCode } }))
        return page(reply, error.httpStatus, signInPage({ brand: brandOf(request), rd, message: noticeFor(error) }))
      }
    })
    refuseOtherMethods(pages, '/auth/signin/code', ['POST'])

    pages.get('/auth/signout', { schema: { hide: true }, config: { ownQuery: true } }, async (request, reply) => {
      const current = await signedIn(request)
      return page(reply, 200, signOutPage({ brand: brandOf(request), username: current?.record.username, rd: redirectOf(request, redirectParameter(request.url)) }))
    })

    pages.post('/auth/signout', { schema: { hide: true } }, async (request, reply) => {
      const token = browserToken(request)
      if (token !== undefined) {
        // Ended already (or never ours): the cookie goes all the same.
        await auth.logout(token, clientOf(request)).catch((error: unknown) => {
          if (!(error instanceof StatusError) || error.status !== 403) throw error
        })
      }
      reply.clearCookie(TOKEN_COOKIE, cookie)
      return await reply.code(303).header('location', redirectOf(request, field(request.body, 'rd')) ?? '/auth/signin').send()
    })
    refuseOtherMethods(pages, '/auth/signout', ['GET', 'POST'])

    pages.post('/auth/passkeys/:id/delete', { schema: { hide: true } }, async (request, reply) => {
      const current = await signedIn(request)
      if (current === undefined) return await reply.code(303).header('location', '/auth/signin').send()
      const { id } = request.params as { id: string }
      await passkeys.remove(current.record.accountId, id)
      return await reply.code(303).header('location', '/auth/signin?done=passkey-removed#passkeys-section').send()
    })
    refuseOtherMethods(pages, '/auth/passkeys/:id/delete', ['POST'])
  })

  // The passkey ceremonies, called by the page's script: JSON in and out, the service's usual errors.
  await app.register(async (api: FastifyInstance) => {
    const failed = { status: 701, message: 'Login Failed' }

    // onRequest: a refused request is answered before its body is read.
    api.post('/auth/signin/passkey/options', { schema: { hide: true }, onRequest: limitPerClient(preSignIn, 'passkey-options') }, async (request) =>
      ({ status: 0, message: 'Success', options: await ceremonies.authenticationOptions(relyingParty(request)) }))

    api.post('/auth/signin/passkey', { schema: { hide: true }, onRequest: limitPerClient(preSignIn, 'passkey') }, async (request, reply) => {
      const response = (request.body as { response?: unknown } | undefined)?.response
      if (!isCredentialAnswer(response)) return await reply.code(401).send(failed)
      const issued = await ceremonies.signIn(response as AuthenticationResponseJSON, relyingParty(request), clientOf(request), browserToken(request))
      setToken(reply, issued)
      return { status: 0, message: 'Success', redirect: redirectOf(request, field(request.body, 'rd')) ?? '/auth/signin' }
    })

    // A passkey outlives the browser's token: the password again first (AuthService.stepUp), and
    // the challenge is bound to the account it proved, so the token alone never registers one.
    api.post('/auth/passkeys/options', { schema: { hide: true } }, async (request, reply) => {
      const current = await signedIn(request)
      if (current === undefined) return await reply.code(403).send({ status: 403, message: 'Unauthorized' })
      const currentPassword = field(request.body, 'current_password')
      if (currentPassword === undefined) throw badRequest(reasons.required('current_password'))
      const account = await auth.stepUp({ token: current.token, currentPassword, client: clientOf(request) })
      const options = await ceremonies.registrationOptions({ id: account.id, username: account.username }, relyingParty(request))
      return { status: 0, message: 'Success', options }
    })

    api.post('/auth/passkeys', { schema: { hide: true } }, async (request, reply) => {
      const current = await signedIn(request)
      if (current === undefined) return await reply.code(403).send({ status: 403, message: 'Unauthorized' })
      const response = (request.body as { response?: unknown } | undefined)?.response
      if (!isCredentialAnswer(response) || !await ceremonies.register(current.record.accountId, response as RegistrationResponseJSON, relyingParty(request), clientName(request.headers['user-agent'] ?? ''))) {
        return await reply.code(400).send({ status: 400, message: 'Bad Request' })
      }
      return { status: 0, message: 'Success' }
    })
    for (const path of ['/auth/signin/passkey/options', '/auth/signin/passkey', '/auth/passkeys/options', '/auth/passkeys']) refuseOtherMethods(api, path, ['POST'])
  })
}

/** The outer shape of a WebAuthn answer (the library checks the rest). */
function isCredentialAnswer (value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false
  const answer = value as Record<string, unknown>
  return typeof answer.id === 'string' && typeof answer.rawId === 'string' && answer.type === 'public-key' &&
    typeof answer.response === 'object' && answer.response !== null
}
