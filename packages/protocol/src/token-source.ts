import type { IncomingHttpHeaders } from 'node:http'
import { TOKEN_COOKIE } from './token.js'

/**
 * Where a request's token comes from, for every route that takes one and for the guard
 * (api-contract, "Extensions"): the path segment, then the `token` parameter (a body value
 * wins over a query value), then `Authorization: Bearer`, then the `AuthToken1` cookie. An
 * empty value counts as absent. Nothing here knows Fastify: callers hand over what the
 * request carries.
 */

/**
 * Why a request presents no usable token although it carries one; routes decide the answer
 * (the service words it for its access log and a 400's detail: errors/reasons.ts, refusalReason).
 */
export class TokenRefusal {
  readonly problem: 'malformed-authorization' | 'ambiguous-cookie' | 'malformed-parameter'
  constructor (problem: TokenRefusal['problem']) {
    this.problem = problem
  }
}

/** `Authorization: Bearer` with no credential, two, or characters no token68 has (RFC 6750 §2.1). */
export const MALFORMED_AUTHORIZATION = new TokenRefusal('malformed-authorization')
/**
 * Two different `AuthToken1` values: a sibling subdomain or a narrower path can toss a cookie
 * of its own beside the real one, and which comes first is the browser's choice, so none is
 * believed.
 */
export const AMBIGUOUS_COOKIE = new TokenRefusal('ambiguous-cookie')
/** A `token` parameter given twice, as an object or as a number (the guard sees unvalidated input). */
export const MALFORMED_PARAMETER = new TokenRefusal('malformed-parameter')

/** A token, a refusal, or nothing presented (undefined). */
export type Presented = string | TokenRefusal | undefined

/** What a request carries, as Fastify hands it over (validated or not). */
export interface TokenCarrier {
  params?: unknown
  query?: unknown
  body?: unknown
  headers: IncomingHttpHeaders
}

function field (container: unknown, name: string): Presented {
  if (typeof container !== 'object' || container === null || Buffer.isBuffer(container)) return undefined
  if (!Object.prototype.hasOwnProperty.call(container, name)) return undefined
  const value: unknown = (container as Record<string, unknown>)[name]
  if (value === undefined || value === '') return undefined
  return typeof value === 'string' ? value : MALFORMED_PARAMETER
}

/** The `token` parameter: a body value wins over a query value (contract, every route). */
export function parameterToken (query: unknown, body: unknown): Presented {
  return field(body, 'token') ?? field(query, 'token')
}

// token68 (RFC 9110 §11.2) after the scheme; Node has already trimmed the header's ends.
const BEARER = /^Bearer[ \t]+([A-Za-z0-9._~+/-]+=*)$/i
const BEARER_SCHEME = /^Bearer(?:[ \t]|$)/i

/**
 * The Bearer credential of an Authorization header. Another scheme (Basic, Negotiate, …) is
 * not ours and carries no token; a Bearer header that is not `Bearer <token68>` is refused.
 */
export function bearerToken (header: string | undefined): Presented {
  if (header === undefined || header === '') return undefined
  if (!BEARER_SCHEME.test(header)) return undefined
  const match = BEARER.exec(header)
  return match === null ? MALFORMED_AUTHORIZATION : match[1]
}

function cookieValue (raw: string): string {
  let value = raw.trim()
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1)
  if (!value.includes('%')) return value
  try {
    return decodeURIComponent(value)
  } catch {
    // As @fastify/cookie does: kept as sent (no token has a '%', so it is refused as unknown).
    return value
  }
}

/**
 * The `AuthToken1` cookie. Every occurrence is read, never the first alone: two different
 * non-empty values are AMBIGUOUS_COOKIE (the same value twice is one value).
 */
export function cookieToken (header: string | undefined): Presented {
  if (header === undefined || header === '' || !header.includes(TOKEN_COOKIE)) return undefined
  let found: string | undefined
  // Pieces found with indexOf rather than split: no array per request on the hot path.
  let start = 0
  while (start < header.length) {
    let end = header.indexOf(';', start)
    if (end < 0) end = header.length
    const equals = header.indexOf('=', start)
    if (equals >= 0 && equals < end && header.slice(start, equals).trim() === TOKEN_COOKIE) {
      const value = cookieValue(header.slice(equals + 1, end))
      if (value !== '') {
        if (found !== undefined && found !== value) return AMBIGUOUS_COOKIE
        found = value
      }
    }
    start = end + 1
  }
  return found
}

/** Where a request carried its token: the source that won, in the contract's order. */
export type TokenSource = 'path' | 'body' | 'query' | 'bearer' | 'cookie'

/** The token a request presents, and where it was found. */
export interface FoundToken {
  readonly token: string
  readonly source: TokenSource
}

/** A token with its source, a refusal, or nothing presented (undefined). */
export type Presentation = FoundToken | TokenRefusal | undefined

/**
 * The presented token and its source, in one pass, in the contract's order: path segment,
 * `token` parameter (body, then query), Bearer, cookie. A malformed Authorization header is
 * refused whichever source wins (a request that says something broken about its credentials is
 * a bad request, not one to guess about). The source is returned so that a caller with a rule
 * about one of them (an API key is no credential in the cookie) need not read the request again.
 */
export function presentedToken (request: TokenCarrier): Presentation {
  const authorization = request.headers.authorization
  const bearer = authorization === undefined ? undefined : bearerToken(authorization)
  if (bearer === MALFORMED_AUTHORIZATION) return bearer
  return found(field(request.params, 'token'), 'path') ??
    found(field(request.body, 'token'), 'body') ??
    found(field(request.query, 'token'), 'query') ??
    found(bearer, 'bearer') ??
    found(cookieToken(request.headers.cookie), 'cookie')
}

function found (presented: Presented, source: TokenSource): Presentation {
  return typeof presented === 'string' ? { token: presented, source } : presented
}
