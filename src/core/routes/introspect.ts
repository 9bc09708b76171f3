import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { lifetimeSeconds, type AuthService } from '../auth.js'
import type { IntrospectionClient, TokenSettings } from '../../config/parts/tokens.js'
import { reasons } from '../../errors/reasons.js'
import { badRequest, notFound, StatusError } from '../../errors/status.js'
import { countWrongCredentials } from './wrong-credentials.js'
import type { AuditLog } from '../stores/audit-log.js'
import type { LoginLimiter } from '../stores/login-limiter.js'
import { ERROR_ANSWERS, EXAMPLE_TOKEN, EXAMPLE_USERNAME, GROUPS, NO_GROUPS } from '../schemas.js'
import { refuseOtherMethods } from '../../http/methods.js'

/**
 * OAuth 2.0 Token Introspection (RFC 7662) at POST /auth/introspect, for API gateways and
 * OAuth libraries that already speak it. Clients authenticate with HTTP Basic against
 * AUTH_INTROSPECTION_CLIENTS; with none configured the endpoint is off (404).
 */

export interface IntrospectRoutesOptions {
  auth: AuthService
  config: Pick<TokenSettings, 'introspectionClients' | 'tokenTtlSeconds' | 'federatedTokenTtlSeconds'>
  /** Failed client authentications, counted per client address as wrong admin keys are (a namespace of their own). */
  limiter: LoginLimiter
  audit: AuditLog
}

/** Whether the request presents HTTP Basic credentials at all: only those can be wrong, and count. */
const presentsBasic = (authorization: string | undefined): boolean => authorization !== undefined && /^Basic(?:[ \t]|$)/i.test(authorization)

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest()

/** RFC 6749 §2.3.1: the id and secret are form-urlencoded before they are joined and base64-encoded. */
function formDecode (text: string): string | undefined {
  try {
    return decodeURIComponent(text.replaceAll('+', ' '))
  } catch {
    return undefined
  }
}

/**
 * Whether an Authorization header carries the id and secret of a configured client. Every
 * client is compared, each by SHA-256 digests of equal length with timingSafeEqual, so the
 * time taken says neither which id exists nor how much of a secret was right.
 */
export function clientAuthenticator (clients: readonly IntrospectionClient[]): (authorization: string | undefined) => boolean {
  const known = clients.map((client) => ({ id: digest(client.id), secret: digest(client.secret) }))
  return (authorization) => {
    const match = authorization === undefined ? null : /^Basic[ \t]+([A-Za-z0-9+/]+=*)$/i.exec(authorization)
    const decoded = match?.[1] === undefined ? '' : Buffer.from(match[1], 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    const id = colon < 0 ? undefined : formDecode(decoded.slice(0, colon))
    const secret = colon < 0 ? undefined : formDecode(decoded.slice(colon + 1))
    // Compared even when nothing was sent, so a missing header takes the time a wrong one does.
    const given = { id: digest(id ?? ''), secret: digest(secret ?? '') }
    let accepted = false
    for (const client of known) {
      const idMatches = timingSafeEqual(client.id, given.id)
      const secretMatches = timingSafeEqual(client.secret, given.secret)
      accepted = (idMatches && secretMatches) || accepted
    }
    return accepted && id !== undefined && secret !== undefined
  }
}

const INACTIVE = Object.freeze({ active: false as const })
const INVALID_CLIENT = JSON.stringify({ status: 401, message: 'Unauthorized' })

export const introspectRoutes: FastifyPluginAsyncTypebox<IntrospectRoutesOptions> = async (app, { auth, config, limiter, audit }) => {
  const off = config.introspectionClients.length === 0
  const authenticated = clientAuthenticator(config.introspectionClients)

  const refuse = async (reply: FastifyReply): Promise<FastifyReply> =>
    await reply.code(401).header('www-authenticate', 'Basic realm="introspection", charset="UTF-8"').type('application/json; charset=utf-8').send(INVALID_CLIENT)

  // Before the body is read: an unknown client gets nothing parsed, an endpoint that is off says 404 to every method.
  // As for the admin key: the right credentials are never refused, none at all is a plain 401, and
  // only wrong ones count towards a lock of the client address (429), each an audit event.
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (off) throw notFound()
    if (request.method !== 'POST') return
    const { authorization } = request.headers
    if (authenticated(authorization)) return
    if (!presentsBasic(authorization)) return await refuse(reply)
    await countWrongCredentials(request, { limiter, audit, event: 'introspect.unauthorized', outcome: 'wrong-client-credentials' })
    return await refuse(reply)
  })

  const ActiveSchema = Type.Object({
    active: Type.Boolean({ description: 'true only for an active token; anything else is `{"active":false}` and nothing more' }),
    sub: Type.Optional(Type.String({ description: 'The account id' })),
    username: Type.Optional(Type.String()),
    exp: Type.Optional(Type.Integer({ description: 'When the token stops working, seconds since the epoch' })),
    iat: Type.Optional(Type.Integer({ description: 'When the token was issued or last refreshed (its expiry less its lifetime), seconds since the epoch' })),
    token_type: Type.Optional(Type.Literal('Bearer')),
    kind: Type.Optional(Type.Union([Type.Literal('token'), Type.Literal('api_key'), Type.Literal('oidc')], { description: 'A Login token, an API key, or an OpenID Connect access token' })),
    key_id: Type.Optional(Type.String({ description: 'The API key\'s id (kind api_key only)' })),
    client_id: Type.Optional(Type.String({ description: 'The OpenID Connect client the access token went to (kind oidc only)' })),
    groups: Type.Optional(GROUPS)
  }, {
    description: 'The token\'s state (RFC 7662 §2.2)',
    examples: [{ active: true, sub: '1', username: EXAMPLE_USERNAME, exp: 1795394508, iat: 1795351308, token_type: 'Bearer', groups: ['ops'] }, { active: false }]
  })
  const BodySchema = Type.Object({
    token: Type.Unknown({ description: 'The token to introspect (required)', examples: [EXAMPLE_TOKEN] }),
    token_type_hint: Type.Optional(Type.Unknown({ description: 'Accepted and ignored: the service has one kind of token' }))
  }, { additionalProperties: true })

  app.post('/auth/introspect', {
    schema: {
      // Off (no AUTH_INTROSPECTION_CLIENTS) it answers 404: the docs list what this configuration serves.
      hide: off,
      tags: ['gateways'],
      summary: 'Introspection (RFC 7662): is this token active, and whose is it?',
      description: 'Form body `token` (and optional `token_type_hint`); the client authenticates with HTTP Basic as one of ' +
        'AUTH_INTROSPECTION_CLIENTS (404 when none is configured). Any token that is not active, malformed or given twice ' +
        'included, is `{"active":false}`.',
      body: BodySchema,
      response: {
        200: ActiveSchema,
        400: Type.Object({ status: Type.Integer(), message: Type.String(), detail: Type.String() }, {
          description: 'Bad Request: no token parameter', examples: [{ status: 400, message: 'Bad Request', detail: reasons.required('token') }]
        }),
        401: Type.Object({ status: Type.Integer(), message: Type.String() }, {
          description: 'The client is unknown or its secret is wrong (or no Basic credentials were sent)',
          examples: [{ status: 401, message: 'Unauthorized' }],
          headers: { 'WWW-Authenticate': { type: 'string', description: 'Basic realm="introspection"' } }
        }),
        404: ERROR_ANSWERS[404],
        429: Type.Object({ status: Type.Integer(), message: Type.String() }, {
          description: 'Too many wrong client credentials from this address (the right ones are never refused)',
          examples: [{ status: 429, message: 'Too Many Requests' }],
          headers: { 'Retry-After': { type: 'string', description: 'Seconds until this address may try again' } }
        }),
        503: ERROR_ANSWERS[503]
      }
    }
  }, async (request) => {
    const token: unknown = (request.body as Record<string, unknown>).token
    if (token === undefined || token === '') throw badRequest(reasons.required('token'))
    // Given twice (an array), as a number or an object: not a token of ours.
    if (typeof token !== 'string') return INACTIVE
    try {
      const record = await auth.authenticateCredential(token, request)
      const exp = Math.floor(record.expiresAt / 1000)
      // A key's issue time is not in its record (its life is its own): no iat.
      const groups = [...record.groups ?? NO_GROUPS]
      if (record.keyId !== undefined) return { active: true, sub: record.accountId, username: record.username, exp, token_type: 'Bearer' as const, kind: 'api_key' as const, key_id: record.keyId, groups }
      if (record.oidc !== undefined) return { active: true, sub: record.accountId, username: record.username, exp, token_type: 'Bearer' as const, kind: 'oidc' as const, client_id: record.oidc.clientId, groups }
      return { active: true, sub: record.accountId, username: record.username, exp, iat: exp - lifetimeSeconds(config, record.federated), token_type: 'Bearer' as const, groups }
    } catch (error) {
      // Unknown, expired or ended: inactive. A store that cannot answer is a 503, never a false answer either way.
      if (error instanceof StatusError && error.httpStatus === 403) return INACTIVE
      throw error
    }
  })
  refuseOtherMethods(app, '/auth/introspect', ['POST'])
}
