import type { FastifyRequest } from 'fastify'

import { TOKEN_COOKIE } from '../tokens/cookie.js'

/** A `token` given in a shape no token has (twice, as an object or a number): refused like a bad token. */
export const MALFORMED = Symbol('malformed token')

type Found = string | typeof MALFORMED | undefined

function field (container: unknown, name: string): Found {
  if (typeof container !== 'object' || container === null || Buffer.isBuffer(container)) return undefined
  if (!Object.prototype.hasOwnProperty.call(container, name)) return undefined
  const value: unknown = (container as Record<string, unknown>)[name]
  if (value === undefined || value === '') return undefined
  return typeof value === 'string' ? value : MALFORMED
}

const BEARER = /^Bearer[ \t]+([^ \t]+)[ \t]*$/i

function bearer (header: string | undefined): Found {
  if (header === undefined || header === '') return undefined
  const match = BEARER.exec(header)
  if (match !== null) return match[1]
  // Another scheme (Basic, …) carries no token of ours; a broken Bearer header is a bad token.
  return /^Bearer\b/i.test(header) ? MALFORMED : undefined
}

/** The first `AuthToken1` cookie, as @fastify/cookie would read it (without needing the plugin). */
function cookie (header: string | undefined): Found {
  if (header === undefined) return undefined
  for (const pair of header.split(';')) {
    const equals = pair.indexOf('=')
    if (equals < 0 || pair.slice(0, equals).trim() !== TOKEN_COOKIE) continue
    let value = pair.slice(equals + 1).trim()
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1)
    if (value === '') return undefined
    try {
      return decodeURIComponent(value)
    } catch {
      return MALFORMED
    }
  }
  return undefined
}

/**
 * The presented token, looked for in this order: the route's `token` path parameter,
 * the `token` query parameter, a `token` field of a form or JSON body,
 * `Authorization: Bearer`, the `AuthToken1` cookie. An empty value counts as absent.
 */
export function presentedToken (request: FastifyRequest): Found {
  return field(request.params, 'token') ??
    field(request.query, 'token') ??
    field(request.body, 'token') ??
    bearer(request.headers.authorization) ??
    cookie(request.headers.cookie)
}
