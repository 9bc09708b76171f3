import { fastifyCookie, type CookieSerializeOptions } from '@fastify/cookie'
import type { FastifyRequest } from 'fastify'
import type { CookieSettings } from '../config/parts/http.js'
import { TOKEN_COOKIE } from '@auth-token-service/protocol/token'

/**
 * The `AuthToken1` cookie of a request, parsed as @fastify/cookie parses it. Routes that
 * only read the cookie use this instead of the plugin, whose two hooks would run on every
 * request of the hot path; the routes that set it (Login, Logout) register the plugin.
 */
export function tokenCookie (request: FastifyRequest): string | undefined {
  const header = request.headers.cookie
  return header === undefined || header === '' ? undefined : fastifyCookie.parse(header)[TOKEN_COOKIE]
}

/** Attributes shared by setting and clearing the cookie: a clear only works with the same ones. */
export function tokenCookieOptions (config: CookieSettings): CookieSerializeOptions {
  return {
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure: config.cookieSecure,
    ...(config.cookieDomain === undefined ? {} : { domain: config.cookieDomain })
  }
}
