import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify'
import type Provider from 'oidc-provider'
import { cookieToken } from '@auth-token-service/protocol/token-source'
import { hashToken, isTokenShaped } from '@auth-token-service/protocol/token'
import type { TokenRecord } from '@auth-token-service/protocol/layout'
import type { TokenStore } from '../core/stores/token-store.js'
import type { UserStore } from '../core/stores/user-store.js'
import type { SignInLinks } from './sign-in-links.js'
import { sendContinuePage } from './continue-page.js'

/** Where the provider sends a browser to sign in: the service's own page, then back here. */
export const INTERACTION_PREFIX = '/auth/oidc/interaction/'

export interface OidcRoutesOptions {
  /** The provider now (a rotation of the signing keys makes a new one: oidc-provider fixes its keys when made). */
  provider: () => Provider
  /** The issuer's path on the public port (`/oidc`). */
  path: string
  tokens: Pick<TokenStore, 'find'>
  users: Pick<UserStore, 'findByUsername'>
  links: SignInLinks
  /** When a Login token was issued or last refreshed (its expiry less its lifetime), epoch seconds. */
  issuedAt: (record: TokenRecord) => number
}

/**
 * The provider on the public port, at its issuer's path, and the interaction that signs a person in
 * for it. Mounted by route rather than by a middleware on every request (@fastify/middie, which
 * oidc-provider's docs show, runs on every request, Authenticate's too): the routes below the path
 * hand the raw request to the provider before anything parses its body, the path taken off the URL
 * as a mount would.
 */
export async function oidcRoutes (app: FastifyInstance, options: OidcRoutesOptions): Promise<void> {
  const { path, tokens, users, links } = options
  const callbacks = new WeakMap<Provider, ReturnType<Provider['callback']>>()
  const callbackOf = (provider: Provider): ReturnType<Provider['callback']> => {
    let found = callbacks.get(provider)
    if (found === undefined) callbacks.set(provider, found = provider.callback())
    return found
  }

  const hand = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void): void => {
    reply.hijack()
    const raw = request.raw
    const url = raw.url ?? '/'
    // As a mount (Express's, middie's) leaves it: the provider reads its mount path from the difference.
    Object.assign(raw, { originalUrl: url })
    raw.url = url.slice(path.length) === '' ? '/' : url.slice(path.length)
    callbackOf(options.provider())(raw, reply.raw).catch((error: unknown) => { done(error instanceof Error ? error : new Error(String(error))) })
  }
  const never = async (): Promise<never> => { throw new Error('the provider answers in its onRequest hook') }
  const methods: HTTPMethods[] = ['GET', 'POST', 'OPTIONS', 'HEAD']
  app.route({ method: methods, url: `${path}/*`, schema: { hide: true }, config: { ownQuery: true }, onRequest: hand, handler: never })

  /** The browser's active sign-in token (a Login token's record), or undefined. */
  const signedIn = async (request: FastifyRequest): Promise<{ hash: string, record: TokenRecord } | undefined> => {
    const token = cookieToken(request.headers.cookie)
    if (typeof token !== 'string' || !isTokenShaped(token)) return undefined
    const hash = hashToken(token)
    const record = await tokens.find(hash, true)
    if (record === null || record.oidc !== undefined || record.keyId !== undefined) return undefined
    return { hash, record }
  }

  app.get(`${INTERACTION_PREFIX}:uid`, { schema: { hide: true } }, async (request, reply) => {
    const provider = options.provider()
    const details = await provider.interactionDetails(request.raw, reply.raw)
    const current = await signedIn(request)
    const reasons = details.prompt.reasons
    const authTime = current === undefined ? 0 : options.issuedAt(current.record)
    // prompt=login or max_age: a sign-in made after the request began, not the one the browser had.
    const maxAge = typeof details.params.max_age === 'number' ? details.params.max_age : undefined
    const fresh = reasons.includes('login_prompt')
      ? authTime >= details.iat
      : maxAge === undefined || authTime >= Math.floor(Date.now() / 1000) - maxAge
    if (current === undefined || !fresh) {
      const again = reasons.includes('login_prompt') || maxAge !== undefined ? '&prompt=login' : ''
      return await reply.code(303).header('location', `/auth/signin?rd=${encodeURIComponent(request.url)}${again}`).send()
    }
    const { record, hash } = current
    if (details.session?.uid !== undefined) await links.link(details.session.uid, hash, record.expiresAt - Date.now())
    const account = await users.findByUsername(record.username)
    const amr = account?.secondFactor === true ? ['pwd', 'otp'] : ['pwd']
    const result = { login: { accountId: record.accountId, ts: authTime, amr, remember: true } }
    // The browser came by redirects from one of this origin's pages, the sign-in form's POST: its
    // redirects must end here (continue-page.ts). From elsewhere (a client, single sign-on): on at once.
    if (request.headers['sec-fetch-site'] === 'same-origin') {
      return await sendContinuePage(reply, await provider.interactionResult(request.raw, reply.raw, result, { mergeWithLastSubmission: false }))
    }
    reply.hijack()
    await provider.interactionFinished(request.raw, reply.raw, result, { mergeWithLastSubmission: false })
  })
}
