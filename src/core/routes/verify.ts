import proxyAddr from '@fastify/proxy-addr'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest, HTTPMethods } from 'fastify'
import { Type } from 'typebox'
import type { AuthService } from '../auth.js'
import type { OriginalUriHeader, TrustProxy } from '../../config/parts/http.js'
import { noteRefusal } from '../../logging/refusal-log.js'
import { bearerToken, cookieToken, TokenRefusal, type Presented } from '@auth-token-service/protocol/token-source'
import { isApiKeyShaped } from '../api-key-secret.js'
import { refusalReason, WordedRefusal } from '../../http/token-refusal.js'
import { reasons } from '../../errors/reasons.js'
import { StatusError } from '../../errors/status.js'
import { formatExpirationDate } from '../time.js'
import { ERROR_ANSWERS, EXAMPLE_EXPIRATION, EXAMPLE_USERNAME } from '../schemas.js'

/**
 * Forward-auth for gateways (api-contract, Extensions): nginx `auth_request`,
 * Traefik `forwardAuth`, Caddy `forward_auth` and Envoy `ext_authz` ask here before they
 * forward a request. Any method, on `/auth/verify` and any path below it (Envoy appends
 * the original path). The answer is made in the route's onRequest hook, so the body is never
 * parsed (gateways send the client's method, and some its body).
 */

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route reads its query itself: a query the strict parser refused is not a 400 before it runs. */
    ownQuery?: boolean
  }
}

export interface VerifyRoutesOptions {
  auth: AuthService
  trustProxy: TrustProxy
  /** The one header the original URI is read from (AUTH_ORIGINAL_URI_HEADER); default X-Forwarded-Uri. */
  originalUriHeader?: OriginalUriHeader
}

/** The same bytes for every refusal: missing, unknown, expired, ended, ambiguous or malformed alike. */
const UNAUTHORIZED = JSON.stringify({ status: 401, message: 'Unauthorized' })

/** Whether the peer itself (hop 0) is a proxy AUTH_TRUST_PROXY trusts, as Fastify's trustProxy decides. */
export function callerTrusted (trustProxy: TrustProxy): (address: string | undefined) => boolean {
  if (typeof trustProxy === 'boolean') return () => trustProxy
  if (typeof trustProxy === 'number') return () => trustProxy >= 1
  const trust = proxyAddr.compile(trustProxy)
  return (address) => address !== undefined && trust(address, 0)
}

function formDecoded (text: string): string | undefined {
  try {
    return decodeURIComponent(text.replaceAll('+', ' '))
  } catch {
    return undefined
  }
}

/**
 * The `token` query parameter of a URL (a path with its query). Only `token` is looked at: the
 * rest of the query is the upstream's business, so a parameter the service's own strict parser
 * would refuse (Latin-1 percent-encoding, say) does not hide the token. Two values are ambiguous.
 */
function queryToken (uri: string): Presented {
  const q = uri.indexOf('?')
  if (q < 0) return undefined
  const hash = uri.indexOf('#', q)
  const query = uri.slice(q + 1, hash < 0 ? undefined : hash)
  let found: string | undefined
  for (const piece of query.split('&')) {
    const equals = piece.indexOf('=')
    if (equals < 0 || formDecoded(piece.slice(0, equals)) !== 'token') continue
    const value = formDecoded(piece.slice(equals + 1))
    // An undecodable value could not be a token (ours are base64url).
    if (value === undefined || value === '') continue
    if (found !== undefined && found !== value) return AMBIGUOUS_QUERY
    found = value
  }
  return found
}

const AMBIGUOUS_QUERY = new WordedRefusal('malformed-parameter', reasons.givenMoreThanOnce('token'))
const ORIGINAL_URIS_DIFFER = new WordedRefusal('malformed-parameter', reasons.originalUrisDiffer())

function header (request: FastifyRequest, name: OriginalUriHeader): string | undefined {
  const value = request.headers[name]
  return typeof value === 'string' && value !== '' ? value : undefined
}

/**
 * The access rule of the URL the gateway calls (api-contract: `/auth/verify?group=a,b`): each
 * `group` parameter a list of names, at least one of which the account must be in. Read from this
 * request's own URL only, never the original URI (the client's). Several `group` parameters must
 * each be met: a gateway that appends the client's query to the URL (Envoy's path prefix) gives the
 * client a way to add a rule, never to widen one. Undefined: no rule.
 */
export function groupRule (url: string): string[][] | undefined {
  const q = url.indexOf('?')
  if (q < 0) return undefined
  let rule: string[][] | undefined
  for (const piece of url.slice(q + 1).split('&')) {
    const equals = piece.indexOf('=')
    if (equals < 0 || formDecoded(piece.slice(0, equals)) !== 'group') continue
    const names = (formDecoded(piece.slice(equals + 1)) ?? '').split(',').map((name) => name.trim()).filter((name) => name !== '')
    ;(rule ??= []).push(names)
  }
  return rule
}

/** Whether groups (sorted, possibly none) meet every list of the rule (one name of each). */
export function meetsRule (groups: readonly string[] | undefined, rule: readonly string[][]): boolean {
  return rule.every((names) => names.some((name) => groups?.includes(name) === true))
}

/** A username as a header value: percent-encoded UTF-8, so any name is one line of ASCII (plain names are unchanged). */
export function userHeaderValue (username: string): string {
  return encodeURIComponent(username)
}

export const verifyRoutes: FastifyPluginAsyncTypebox<VerifyRoutesOptions> = async (app, { auth, trustProxy, originalUriHeader = 'x-forwarded-uri' }) => {
  const trusted = callerTrusted(trustProxy)
  const otherHeader: OriginalUriHeader = originalUriHeader === 'x-forwarded-uri' ? 'x-original-uri' : 'x-forwarded-uri'

  /**
   * Bearer, then the cookie, then the `token` query parameter of the original URL: the one
   * header the gateway sets (AUTH_ORIGINAL_URI_HEADER, X-Forwarded-Uri by default) when the
   * caller is a trusted proxy, else the URL of this request itself (its query, which Caddy and
   * Envoy carry over). Only that one header: a gateway passes on whatever else the client sent,
   * so the other name could be the client's (when both names were read, a client's X-Forwarded-Uri
   * sent through nginx won over nginx's own X-Original-URI). A malformed Bearer header or two cookie values
   * are no token (401), noted for the log.
   */
  function presented (request: FastifyRequest): string | undefined {
    const bearer = bearerToken(request.headers.authorization)
    const cookie = bearer === undefined ? cookieToken(request.headers.cookie) : undefined
    // An API key is never taken from the cookie (the contract: a key there is no credential): no token at all, as for garbage.
    if (typeof cookie === 'string' && isApiKeyShaped(cookie)) return undefined
    let found = bearer ?? cookie
    if (found === undefined) {
      const forwarded = header(request, originalUriHeader)
      if (forwarded !== undefined && trusted(request.socket.remoteAddress)) {
        // The other name is never read, but one that differs beside it is a sign: a gateway
        // file of before (nginx setting X-Original-URI) passing a client's X-Forwarded-Uri on.
        const other = header(request, otherHeader)
        found = other !== undefined && other !== forwarded ? ORIGINAL_URIS_DIFFER : queryToken(forwarded)
      } else {
        found = queryToken(request.url)
        if (found === undefined && (forwarded ?? header(request, otherHeader)) !== undefined) noteRefusal(request, reasons.originalUriNotTrusted())
      }
    }
    if (found instanceof TokenRefusal) {
      noteRefusal(request, refusalReason(found))
      return undefined
    }
    return found
  }

  function refuse (reply: FastifyReply): FastifyReply {
    return reply.code(401).header('www-authenticate', 'Bearer').type('application/json; charset=utf-8').send(UNAUTHORIZED)
  }

  // Answers and ends the request here: the body is never parsed, no content type refused. Not
  // async, as Authenticate's hot path: a hook that answers does not call done, and the store's
  // promise is chained once, with no frame awaiting it.
  function verify (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void): void {
    const token = presented(request)
    if (token === undefined) {
      refuse(reply)
      return
    }
    auth.authenticateCredential(token, request).then((record) => {
      const rule = groupRule(request.url)
      if (rule !== undefined && !meetsRule(record.groups, rule)) {
        // Active but outside the groups: a sign-in would not help, so no 401 (the gateway would send the person to sign in again).
        noteRefusal(request, reasons.notInGroups())
        reply.code(403).header('cache-control', 'no-store').send()
        return
      }
      if (record.groups !== undefined && record.groups.length > 0) reply.header('x-auth-groups', record.groups.join(','))
      if (record.oidc !== undefined) reply.header('x-auth-client-id', record.oidc.clientId)
      reply.code(200)
        .header('x-auth-kind', record.keyId === undefined ? record.oidc === undefined ? 'token' : 'oidc' : 'api_key')
        .header('x-auth-user', userHeaderValue(record.username))
        .header('x-auth-account-id', record.accountId)
        .header('x-auth-federated', record.federated ? 'true' : 'false')
        .header('x-auth-expires', formatExpirationDate(record.expiresAt))
        .send()
    }, (error: unknown) => {
      // Unknown, expired or ended: 401. A store that cannot answer is a 503 (the error handler's), never a pass.
      if (error instanceof StatusError && error.httpStatus === 403) refuse(reply)
      else done(error instanceof Error ? error : new Error(String(error)))
    })
  }
  const never = async (): Promise<never> => { throw new Error('verify answers in its onRequest hook') }

  const identity = (description: string, example: string) => ({ type: 'string' as const, description, examples: [example] })
  const schema = {
    tags: ['gateways'],
    summary: 'Forward-auth for gateways: is the request\'s token active, and whose is it?',
    description: 'Any method, on /auth/verify and any path below it; the body is never read. The token comes from ' +
      'Authorization: Bearer, then the AuthToken1 cookie, then the token query parameter of the original URL ' +
      '(X-Forwarded-Uri, or X-Original-URI when AUTH_ORIGINAL_URI_HEADER names it, from a trusted proxy; else this request\'s own query). Active: 200, empty body, ' +
      'the identity in X-Auth-* headers for the gateway to pass upstream. Anything else: 401 with WWW-Authenticate: Bearer. ' +
      'With `group=a,b` in this URL (the one the gateway calls, never the original URI), an active token whose account is in none of ' +
      'those groups gets 403 with an empty body. Never a redirect.',
    response: {
      200: Type.Null({
        description: 'Active: an empty body and the identity in headers',
        headers: {
          'X-Auth-User': identity('The username, percent-encoded UTF-8 (a plain name is unchanged)', EXAMPLE_USERNAME),
          'X-Auth-Account-Id': identity('The account id', '1'),
          'X-Auth-Federated': identity('true for a directory account, else false', 'false'),
          'X-Auth-Expires': identity('The token\'s expiration_date (UTC, YYYY-MM-DDTHH:MM:SS)', EXAMPLE_EXPIRATION),
          'X-Auth-Groups': identity('The account\'s groups, sorted, comma-separated; absent when it is in none', 'dev,ops'),
          'X-Auth-Kind': identity('token (a Login token), api_key, or oidc (an access token of the OpenID Connect provider)', 'token'),
          'X-Auth-Client-Id': identity('The OpenID Connect client an access token went to (kind oidc only)', 'dBjftJeZ4CVP-mB92K27uh')
        }
      }),
      403: Type.Null({
        description: 'Active, but the account is in none of the groups `group` names: an empty body, Cache-Control: no-store (never a 401: signing in again would not help)',
        headers: { 'Cache-Control': { type: 'string', description: 'no-store' } }
      }),
      401: Type.Object({ status: Type.Integer(), message: Type.String() }, {
        description: 'No token, or one that is unknown, expired, ended, ambiguous (two cookies) or malformed: the same answer',
        examples: [{ status: 401, message: 'Unauthorized' }],
        headers: { 'WWW-Authenticate': { type: 'string', description: 'Bearer' } }
      }),
      503: ERROR_ANSWERS[503]
    }
  }
  const others = app.supportedMethods.filter((method) => method !== 'GET') as HTTPMethods[]
  for (const url of ['/auth/verify', '/auth/verify/*']) {
    // GET is documented; the other methods and the sub-paths do the same (shown once).
    // ownQuery: the query the gateway carries over is the protected service's, not to be refused by our strict parser.
    app.route({ method: 'GET', url, schema: url === '/auth/verify' ? schema : { hide: true }, config: { ownQuery: true }, onRequest: verify, handler: never })
    app.route({ method: others, url, schema: { hide: true }, config: { ownQuery: true }, onRequest: verify, handler: never })
  }
}
