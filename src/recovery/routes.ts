import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { clientOf } from '../core/routes/client-context.js'
import { limitPerClient } from '../core/routes/client-limit.js'
import type { RequestLimiter } from '../core/stores/request-limiter.js'
import { StatusError, tooManyRequests } from '../errors/status.js'
import { refuseOtherMethods } from '../http/methods.js'
import { brandFor, pageHeaders, tooManyAttempts, type Notice } from '../sign-in/index.js'
import { LINK_PATH } from './links.js'
import { validity } from './messages.js'
import { donePage, invalidLinkPage, requestPage, sentPage, setPasswordPage } from './pages.js'
import type { Recovery } from './recovery.js'

export interface RecoveryRoutesOptions {
  recovery: Recovery
  /** The per-client limit of the routes anyone may call before signing in (429 page past it). */
  preSignIn: RequestLimiter
  signinTitle: string | undefined
  redirectAllowed: readonly string[]
  resetTtlMs: number
}

const MESSAGES = {
  missing: 'Enter your username or email address.',
  unavailable: 'This is unavailable right now. Try again in a moment.',
  crossSite: 'This request did not come from this site\'s own page. Try again here.',
  codeRequired: 'Enter the code from your authenticator app, or a recovery code.',
  wrongCode: 'That code is not right. Try again.',
  missingPassword: 'Enter a new password.'
} as const

function field (body: unknown, name: string): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined
  const value = (body as Record<string, unknown>)[name]
  return typeof value === 'string' ? value : undefined
}

function noticeFor (error: StatusError): Notice {
  if (error.status === 429) return { kind: 'error', text: tooManyAttempts(error.headers['retry-after']) }
  if (error.status === 403) return { kind: 'error', text: MESSAGES.crossSite }
  if (error.status === 503) return { kind: 'error', text: MESSAGES.unavailable }
  return { kind: 'error', text: MESSAGES.missing }
}

/**
 * GET/POST /auth/reset (ask for a link) and GET/POST /auth/reset/:secret (the link's page, which
 * sets the password). The secret travels in the path, which the access log shows as its route
 * template (`/auth/reset/:secret`), never as sent. Registered only while mail is on: otherwise
 * every one of these paths is the service's 404.
 */
export const recoveryRoutes: FastifyPluginAsync<RecoveryRoutesOptions> = async (app, options) => {
  const { recovery, preSignIn } = options
  const headers = { ...pageHeaders(options.redirectAllowed), 'cache-control': 'no-store' }
  const brandOf = (request: FastifyRequest): string => brandFor(options.signinTitle, request.hostname)
  const page = (reply: FastifyReply, status: number, body: string): FastifyReply => reply.code(status).headers(headers).send(body)
  const validFor = validity(new Date(options.resetTtlMs), 0)

  await app.register(async (pages: FastifyInstance) => {
    pages.setErrorHandler(async (error, request, reply) => {
      if (!(error instanceof StatusError) || error.status === 500) throw error
      reply.headers(error.headers)
      return page(reply, error.httpStatus, requestPage({ brand: brandOf(request), message: noticeFor(error) }))
    })

    pages.get('/auth/reset', { schema: { hide: true } }, async (request, reply) => page(reply, 200, requestPage({ brand: brandOf(request) })))
    refuseOtherMethods(pages, '/auth/reset', ['GET', 'POST'])

    pages.post('/auth/reset', { schema: { hide: true }, preHandler: limitPerClient(preSignIn, 'reset') }, async (request, reply) => {
      const identifier = field(request.body, 'identifier')?.trim() ?? ''
      if (identifier === '' || identifier.length > 320) return page(reply, 400, requestPage({ brand: brandOf(request), message: { kind: 'error', text: MESSAGES.missing } }))
      // Counted per username or address whether or not an account has it: the 429 says nothing about one.
      const verdict = await recovery.identifierLimit(identifier)
      if (!verdict.allowed) throw tooManyRequests(verdict.retryAfterMs / 1000)
      // The lookup and the mail happen after this answer: it is the same, in the same time, for every identifier.
      recovery.requestReset(identifier)
      return page(reply, 200, sentPage({ brand: brandOf(request), validFor }))
    })

    const linkRoute = `${LINK_PATH}/:secret`
    const secretOf = (request: FastifyRequest): string => (request.params as { secret: string }).secret
    const limited = limitPerClient(preSignIn, 'reset-link')

    pages.get(linkRoute, { schema: { hide: true }, preHandler: limited }, async (request, reply) => {
      const secret = secretOf(request)
      const link = await recovery.openLink(secret)
      if (link === undefined) return page(reply, 410, invalidLinkPage({ brand: brandOf(request) }))
      return page(reply, 200, setPasswordPage({ brand: brandOf(request), action: `${LINK_PATH}/${secret}`, link }))
    })
    refuseOtherMethods(pages, linkRoute, ['GET', 'POST'])

    pages.post(linkRoute, { schema: { hide: true }, preHandler: limited }, async (request, reply) => {
      const secret = secretOf(request)
      const brand = brandOf(request)
      const action = `${LINK_PATH}/${secret}`
      const password = field(request.body, 'new_password') ?? ''
      const otp = field(request.body, 'otp')
      let outcome: Awaited<ReturnType<Recovery['completeReset']>>
      try {
        if (password === '') {
          const link = await recovery.openLink(secret)
          if (link === undefined) return page(reply, 410, invalidLinkPage({ brand }))
          return page(reply, 400, setPasswordPage({ brand, action, link, message: { kind: 'error', text: MESSAGES.missingPassword } }))
        }
        outcome = await recovery.completeReset({ secret, password, otp, client: clientOf(request) })
      } catch (error) {
        // The password's limits or the policy refused it: the page again, saying why (never the password).
        if (!(error instanceof StatusError) || error.httpStatus !== 400) throw error
        const link = await recovery.openLink(secret)
        if (link === undefined) return page(reply, 410, invalidLinkPage({ brand }))
        return page(reply, 400, setPasswordPage({ brand, action, link, message: { kind: 'error', text: error.detail ?? MESSAGES.missingPassword } }))
      }
      switch (outcome.kind) {
        case 'done': return page(reply, 200, donePage({ brand, username: outcome.username, invite: outcome.linkKind === 'invite' }))
        case 'invalid': return page(reply, 410, invalidLinkPage({ brand }))
        case 'code-required': return page(reply, 401, setPasswordPage({ brand, action, link: outcome.link, message: { kind: 'error', text: MESSAGES.codeRequired } }))
        case 'wrong-code': return page(reply, 401, setPasswordPage({ brand, action, link: outcome.link, message: { kind: 'error', text: MESSAGES.wrongCode } }))
      }
    })
  })
}
