import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { randomBytes } from 'node:crypto'
import type { AuthService, ClientContext } from '../core/auth.js'
import { SignInEnded, StatusError, type HeldSignIn } from '../errors/status.js'
import { limitPerClient } from '../core/routes/client-limit.js'
import { refuseOtherMethods } from '../http/methods.js'
import type { RequestLimiter } from '../core/stores/request-limiter.js'
import type { UserRecord } from '../core/stores/user-store.js'
import { clientOf } from '../core/routes/client-context.js'
import { codeStepPage, signInPage } from './pages.js'
import type { PendingStore } from './pending-store.js'
import { field, MESSAGES, noticeFor, type SignInContext } from './page-context.js'

/**
 * The sign-in's second step, for an account with a second factor: the password was right, so the
 * account (never the password) is held server-side for five minutes under a random id in a
 * cookie, and POST /auth/signin/code finishes the Login with the code (AuthService.loginProven).
 */

/** The second factor's check of a code (TOTP); absent, no code is ever accepted. */
export interface SecondFactorCheck {
  verify (account: UserRecord, otp: string, client: ClientContext): Promise<boolean>
}

export interface CodeStepDeps {
  auth: Pick<AuthService, 'loginProven'>
  pending: PendingStore
  /** The per-client limit of the routes anyone may call before signing in. */
  preSignIn: RequestLimiter
  secondFactor?: SecondFactorCheck | undefined
}

export interface CodeStep {
  /** The password was right and a code is needed: the account held, and the code page. */
  begin (request: FastifyRequest, reply: FastifyReply, held: HeldSignIn, rd: string | undefined): Promise<FastifyReply>
  /** A sign-in finished without the code step: one left unfinished before loses its cookie (the record expires by itself). */
  abandon (request: FastifyRequest, reply: FastifyReply): void
  /** POST /auth/signin/code. */
  register (pages: FastifyInstance): void
}

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

export function createCodeStep (context: SignInContext, { auth, pending, preSignIn, secondFactor }: CodeStepDeps): CodeStep {
  const { page, brandOf, redirectOf, browserToken, done } = context
  const pendingCookie = { ...context.cookie, path: PENDING_PATH, sameSite: 'strict' as const }

  /** The held sign-in is over (finished, or ended by a revocation): its record and cookie go. */
  async function release (reply: FastifyReply, id: string): Promise<void> {
    await pending.delete(`pending:${id}`)
    reply.clearCookie(PENDING_COOKIE, pendingCookie)
  }

  async function finish (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
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
      await release(reply, id as string)
      return done(request, reply, issued, rd)
    } catch (error) {
      if (!(error instanceof StatusError)) throw error
      if (error instanceof SignInEnded) {
        // The password changed, the sessions were revoked or the account disabled since: start again.
        await release(reply, id as string)
        return page(reply, 401, signInPage({ brand: brandOf(request), rd, message: { kind: 'error', text: MESSAGES.expired } }))
      }
      reply.headers(error.headers)
      if (error.status === 701) return page(reply, 401, codeStepPage({ brand: brandOf(request), rd, username: held.username, message: { kind: 'error', text: MESSAGES.wrongCode } }))
      return page(reply, error.httpStatus, signInPage({ brand: brandOf(request), rd, message: noticeFor(error) }))
    }
  }

  return {
    async begin (request, reply, held, rd) {
      const id = randomBytes(32).toString('base64url')
      await pending.put(`pending:${id}`, JSON.stringify(held), PENDING_TTL_MS)
      reply.setCookie(PENDING_COOKIE, id, { ...pendingCookie, maxAge: PENDING_TTL_MS / 1000 })
      return page(reply, 401, codeStepPage({ brand: brandOf(request), rd, username: held.username }))
    },
    abandon (request, reply) {
      if (request.cookies[PENDING_COOKIE] !== undefined) reply.clearCookie(PENDING_COOKIE, pendingCookie)
    },
    register (pages) {
      // preHandler, after the body is read: the "Too many attempts" page keeps the form's `rd`.
      pages.post('/auth/signin/code', { schema: { hide: true }, preHandler: limitPerClient(preSignIn, 'code') }, finish)
      refuseOtherMethods(pages, '/auth/signin/code', ['POST'])
    }
  }
}
