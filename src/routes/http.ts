import type { CookieSerializeOptions } from '@fastify/cookie'
import type { FastifyInstance, FastifyRequest, HTTPMethods } from 'fastify'
import type { ClientContext } from '../auth.js'
import type { Config } from '../config.js'
import { methodNotAllowed } from '../lib/status.js'

/** What a POST without a body carries, so body schemas can require an object and still allow none. */
export const EMPTY_BODY: Readonly<Record<string, never>> = Object.freeze({})

/** The cookie that carries the token (spec §2). */
export { TOKEN_COOKIE } from '../http/token-source.js'

/** Attributes shared by setting and clearing the cookie: a clear only works with the same ones. */
export function tokenCookieOptions (config: Pick<Config, 'cookieSecure' | 'cookieDomain'>): CookieSerializeOptions {
  return {
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure: config.cookieSecure,
    ...(config.cookieDomain === undefined ? {} : { domain: config.cookieDomain })
  }
}

/**
 * Answers every method but `allowed` on `url` with 405 and an `Allow` header, so a
 * wrong method is told what would work instead of getting a 404.
 */
export function refuseOtherMethods (app: FastifyInstance, url: string, allowed: readonly HTTPMethods[]): void {
  const others = app.supportedMethods.filter((method) => !allowed.includes(method as HTTPMethods))
  const error = methodNotAllowed(allowed)
  app.route({
    method: others,
    url,
    schema: { hide: true },
    handler: async () => { throw error }
  })
}

/** The client as the limits and the audit trail see it; `request.ip` honours only trusted proxies. */
export function clientOf (request: FastifyRequest): ClientContext {
  return { ip: request.ip, userAgent: request.headers['user-agent'] }
}
