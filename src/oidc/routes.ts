import type { IncomingMessage } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify'
import type Provider from 'oidc-provider'
import { errors } from 'oidc-provider'
import { cookieToken } from '@auth-token-service/protocol/token-source'
import type { ClientContext } from '../core/auth.js'
import { clientOf } from '../core/routes/client-context.js'
import type { TokenStore } from '../core/stores/token-store.js'
import type { SignInLinks } from './sign-in-links.js'
import type { SignInFacts } from './provider.js'
import type { Page, ProviderPages } from './pages.js'
import type { ProviderLog } from './provider-log.js'
import { signInToken, type SignInToken } from './sign-in-token.js'

/** Where the provider sends a browser to sign in: the service's own page, then back here. */
export const INTERACTION_PREFIX = '/auth/oidc/interaction/'

/** The request's max_age in seconds: the provider keeps its parameters as given (text it checked is a whole number). */
function maxAgeOf (value: unknown): number | undefined {
  if (typeof value === 'number') return value
  return typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : undefined
}

export interface OidcRoutesOptions {
  /** The provider now (a rotation of the signing keys makes a new one: oidc-provider fixes its keys when made). */
  provider: () => Provider
  /** The issuer's path on the public port (`/oidc`). */
  path: string
  tokens: Pick<TokenStore, 'find'>
  links: SignInLinks
  /** When and how a sign-in was made (its token's issue or last refresh, epoch seconds; amr). */
  facts: SignInFacts
  /** The provider's pages (pages.ts): its error page, also for an interaction that is gone; the way on after a sign-in. */
  pages: ProviderPages
  /** Where what the provider says of a request is logged, with the request's id. */
  log: ProviderLog
  /** Each request handed to the provider, with its client as the service's trust of proxies sees it (for the audit trail). */
  requestClients: WeakMap<IncomingMessage, ClientContext>
}

/**
 * The provider on the public port, at its issuer's path, and the interaction that signs a person in
 * for it. Mounted by route rather than by a middleware on every request (@fastify/middie, which
 * oidc-provider's docs show, runs on every request, Authenticate's too): the routes below the path
 * hand the raw request to the provider before anything parses its body, the path taken off the URL
 * as a mount would.
 */
export async function oidcRoutes (app: FastifyInstance, options: OidcRoutesOptions): Promise<void> {
  const { path, tokens, links } = options
  const callbacks = new WeakMap<Provider, ReturnType<Provider['callback']>>()
  const callbackOf = (provider: Provider): ReturnType<Provider['callback']> => {
    let found = callbacks.get(provider)
    if (found === undefined) callbacks.set(provider, found = provider.callback())
    return found
  }

  const hand = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void): void => {
    reply.hijack()
    const raw = request.raw
    options.log.attach(raw, request.log)
    options.requestClients.set(raw, clientOf(request))
    // The provider (Koa: `proxy` on whenever AUTH_TRUST_PROXY is set) would take these headers from
    // any peer; it gets what the service's trust of proxies (addresses, hops) made of them instead.
    raw.headers['x-forwarded-proto'] = request.protocol
    raw.headers['x-forwarded-host'] = request.host
    raw.headers['x-forwarded-for'] = request.ip
    const url = raw.url ?? '/'
    // As a mount (Express's, middie's) leaves it: the provider reads its mount path from the difference.
    Object.assign(raw, { originalUrl: url })
    raw.url = url.slice(path.length) === '' ? '/' : url.slice(path.length)
    callbackOf(options.provider())(raw, reply.raw).catch((error: unknown) => { done(error instanceof Error ? error : new Error(String(error))) })
  }
  const never = async (): Promise<never> => { throw new Error('the provider answers in its onRequest hook') }
  const methods: HTTPMethods[] = ['GET', 'POST', 'OPTIONS', 'HEAD']
  app.route({ method: methods, url: `${path}/*`, schema: { hide: true }, config: { ownQuery: true }, onRequest: hand, handler: never })

  const send = async (reply: FastifyReply, page: Page): Promise<FastifyReply> => await reply.code(page.status).headers(page.headers).send(page.body)

  /** The browser's active sign-in token (a Login token's record), or undefined. */
  const signedIn = async (request: FastifyRequest): Promise<SignInToken | undefined> => {
    const token = cookieToken(request.headers.cookie)
    return await signInToken(tokens, typeof token === 'string' ? token : undefined)
  }

  app.get(`${INTERACTION_PREFIX}:uid`, { schema: { hide: true } }, async (request, reply) => {
    const provider = options.provider()
    let details: Awaited<ReturnType<Provider['interactionDetails']>>
    try {
      details = await provider.interactionDetails(request.raw, reply.raw)
    } catch (error) {
      // Expired, finished already, or the cookie of another browser: the provider's page, not a 500.
      if (!(error instanceof errors.SessionNotFound)) throw error
      return await send(reply, options.pages.error(request.hostname, { error: error.error, error_description: error.error_description }, error, 400))
    }
    const current = await signedIn(request)
    const reasons = details.prompt.reasons
    const authTime = current === undefined ? 0 : options.facts.issuedAt(current.record)
    // prompt=login or max_age: a sign-in made after the request began, not the one the browser had.
    const maxAge = maxAgeOf(details.params.max_age)
    const fresh = reasons.includes('login_prompt')
      ? authTime >= details.iat
      : maxAge === undefined || authTime >= Math.floor(Date.now() / 1000) - maxAge
    if (current === undefined || !fresh) {
      // The prompt first: a query that begins with `rd=` and a path is a gateway's raw rd, which takes the rest of the query.
      const again = reasons.includes('login_prompt') || maxAge !== undefined ? 'prompt=login&' : ''
      return await reply.code(303).header('location', `/auth/signin?${again}rd=${encodeURIComponent(request.url)}`).send()
    }
    const { record, hash } = current
    if (details.session?.uid !== undefined) await links.link(details.session.uid, hash, record.expiresAt - Date.now())
    const amr = await options.facts.amr(record, hash)
    const returnTo = await provider.interactionResult(request.raw, reply.raw, { login: { accountId: record.accountId, ts: authTime, amr, remember: true } }, { mergeWithLastSubmission: false })
    return await send(reply, options.pages.continuing(request.hostname, returnTo))
  })
}
