import type { FastifyPluginAsync, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { endpoint } from './client/index.js'
import type { FetchFunction } from './client/wire.js'
import { createThrottledLog } from '@auth-token-service/protocol/throttled-log'
import { hashApiKey, hashToken, isApiKeyShaped, isTokenShaped } from '@auth-token-service/protocol/token'
import { DEFAULT_KEY_PREFIX, type TokenRecord } from '@auth-token-service/protocol/layout'
import type { RedisClient } from '@auth-token-service/protocol/redis-connection'
import { createPositiveCache, type PositiveCache } from './cache.js'
import { presentedToken, TokenRefusal } from '@auth-token-service/protocol/token-source'
import { httpVerifier, type Verifier } from './verifiers.js'

/**
 * The plugin other services register to require a token: `app.register(authTokenGuard,
 * options)` protects every route of the registering scope (fastify-plugin: its hook
 * and decorator land in that scope, not in a child). It answers before the route's
 * own validation, so a caller without a valid token learns nothing about the route.
 */

/** Who the token belongs to, for handlers. */
export interface AuthInfo {
  accountId: string
  username: string
  federated: boolean
  /** The instant the token stops working (its `expiration_date`). */
  expiresAt: Date
  /** Set when the credential is an API key (`atsk_…`): the key's public id. Absent for a Login token. */
  keyId?: string
  /** Set when the credential is an access token of the service's OpenID Connect provider: the client it went to. */
  clientId?: string
  /**
   * The account's groups (sorted; `[]` when none), as of the token's last verification: a
   * membership change reaches a cached answer as a revocation does, through the feed. Frozen.
   */
  groups: readonly string[]
}

/**
 * A route's own rule, in its options' `config` under `authTokenGuard` (Fastify's per-route
 * settings, as @fastify/rate-limit's `config.rateLimit`): `{ config: { authTokenGuard: { groups: ['ops'] } } }`.
 */
export interface RouteGuardConfig {
  /**
   * Only an account in at least one of these groups passes; any other active token is answered
   * 403 (a sign-in would not help, so never 401). At least one valid group name.
   */
  groups?: readonly string[]
}

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Set by the auth-token guard on the routes it protects. Elsewhere null, or absent in a
     * scope with no guard at all (the decorator lives in the scopes that register it).
     */
    auth: AuthInfo | null
  }
  interface FastifyContextConfig {
    /** The guard's rule for this route (RouteGuardConfig); read where the route is added. */
    authTokenGuard?: RouteGuardConfig
  }
}

export interface GuardCacheOptions {
  /** Most positive answers kept; least recently used go first. */
  maxEntries: number
  /** How long one is reused at most; never past the token's own expiry. */
  ttlMs: number
}

interface CommonGuardOptions {
  /** A cache of positive answers, kept right by the revocation feed; off when absent. */
  cache?: GuardCacheOptions
  /** Bound on one verification; default 500 ms against Redis, 2000 ms over HTTP. */
  timeoutMs?: number
}

/** Verify straight against the token service's Redis (one GET); give `redisUrl` or `redis`. */
export interface DirectGuardOptions extends CommonGuardOptions {
  redisUrl?: string
  /**
   * A client to share: an ioredis `Redis` (plain or Sentinel) or `Cluster`. The guard never
   * closes it; with a cache it opens one more connection of the same kind for the revocation feed.
   */
  redis?: RedisClient
  /** The service's `AUTH_REDIS_KEY_PREFIX`; default the service's default, `{ats}:`. */
  keyPrefix?: string
  /**
   * Set when the service runs with `AUTH_IDLE_TIMEOUT_SECONDS`: a Login token idle that long is
   * refused here too (one MGET instead of a GET). With a cache, keep `cache.ttlMs` at most a
   * minute: an idle token's end is not announced on the revocation feed.
   */
  idleTimeout?: boolean
}

/** Verify over HTTP against the token service's Authenticate, e.g. `http://auth:3000/auth/Authenticate`. */
export interface HttpGuardOptions extends CommonGuardOptions {
  authenticateUrl: string | URL
  /**
   * The service's revocation stream, on its internal listener (INTERNAL_PORT); default the same
   * origin's `/auth/revocations` (served there only with the service's AUTH_PUBLIC_INTERNALS=true).
   */
  revocationsUrl?: string | URL
  /** The service's AUTH_REVOCATIONS_KEY, sent as `Authorization: Bearer` to the stream. */
  revocationsKey?: string
  fetch?: FetchFunction
}

export type AuthTokenGuardOptions = DirectGuardOptions | HttpGuardOptions

/**
 * For the host's request logger: a URL with the values of `token` (and other secret)
 * query parameters replaced. Fastify logs `req.url` as it came, query and all.
 */
export { redactUrl } from '@auth-token-service/protocol/redact'

/** The Redis key layout direct mode reads (layout.ts): a guard reads the service's of the same version. */
export { KEY_LAYOUT_VERSION } from '@auth-token-service/protocol/layout'

const JSON_TYPE = 'application/json; charset=utf-8'
const BODIES = {
  401: JSON.stringify({ status: 401, message: 'Token Required' }),
  403: JSON.stringify({ status: 403, message: 'Unauthorized' }),
  503: JSON.stringify({ status: 503, message: 'Service Unavailable' })
} as const

/** Pre-serialized, so that no response schema or error handler of the host service reshapes it. */
function refuse (reply: FastifyReply, httpStatus: keyof typeof BODIES): FastifyReply {
  reply.code(httpStatus).header('cache-control', 'no-store').type(JSON_TYPE)
  if (httpStatus === 401) reply.header('www-authenticate', 'Bearer')
  return reply.send(BODIES[httpStatus])
}

const NO_GROUPS: readonly string[] = Object.freeze([])

const toAuth = (record: TokenRecord): AuthInfo => {
  const auth: AuthInfo = {
    accountId: record.accountId,
    username: record.username,
    federated: record.federated,
    expiresAt: new Date(record.expiresAt),
    // Frozen where the verifier made them (direct.ts, client/wire.ts): shared by cached answers.
    groups: record.groups ?? NO_GROUPS
  }
  if (record.keyId !== undefined) auth.keyId = record.keyId
  if (record.oidc !== undefined) auth.clientId = record.oidc.clientId
  return auth
}

/** The contract's group name: 1–64 of `a-z 0-9 . _ -`, starting with a letter or digit. */
const GROUP_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/

type PreValidationHooks = RouteOptions['preValidation']

/**
 * The route's `groups` rule as a preValidation hook of its own, or undefined when it has none. A
 * rule no account could meet (empty, or a name that is no group's) is a mistake in the host's
 * code: it stops the start rather than refuse everyone, or pass anyone, quietly.
 */
function groupRule (config: RouteGuardConfig | undefined, where: string): ((request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => void) | undefined {
  if (config?.groups === undefined) return undefined
  const { groups } = config
  if (!Array.isArray(groups) || groups.length === 0) throw new TypeError(`auth-token-guard: ${where}: groups must name at least one group`)
  for (const group of groups) {
    if (typeof group !== 'string' || !GROUP_NAME.test(group)) throw new TypeError(`auth-token-guard: ${where}: ${JSON.stringify(group)} is no group name (1-64 of a-z 0-9 . _ -)`)
  }
  const allowed = new Set(groups)
  return (request, reply, done) => {
    // The guard's own hook ran first and either refused or set auth; null here fails closed all the same.
    const member = request.auth?.groups.some((group) => allowed.has(group)) === true
    if (!member) {
      refuse(reply, 403)
      return
    }
    done()
  }
}

function positiveNumber (value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new TypeError(`auth-token-guard: ${name} must be a positive number`)
  }
  return value
}

/** One log line per kind of trouble per 10 s (shared/throttled-log.ts): a dead Redis must not flood the host's log. */
function throttled (log: (message: string) => void): (error: unknown) => void {
  const throttle = createThrottledLog()
  return (error) => {
    throttle('trouble', () => { log(error instanceof Error ? error.message : String(error)) })
  }
}

async function openVerifier (options: AuthTokenGuardOptions, onError: (error: unknown) => void): Promise<Verifier> {
  const direct = options as DirectGuardOptions
  if ('authenticateUrl' in options && options.authenticateUrl !== undefined) {
    if (direct.redisUrl !== undefined || direct.redis !== undefined) throw new TypeError('auth-token-guard: give authenticateUrl or redisUrl/redis, not both')
    const authenticateUrl = new URL(options.authenticateUrl)
    return httpVerifier({
      authenticateUrl,
      revocationsUrl: options.revocationsUrl === undefined ? endpoint(authenticateUrl.origin, 'auth/revocations') : new URL(options.revocationsUrl),
      revocationsKey: options.revocationsKey,
      timeoutMs: options.timeoutMs === undefined ? 2000 : positiveNumber(options.timeoutMs, 'timeoutMs'),
      fetch: options.fetch ?? globalThis.fetch,
      onError
    })
  }
  if ((direct.redisUrl === undefined) === (direct.redis === undefined)) {
    throw new TypeError('auth-token-guard: give exactly one of redisUrl, redis or authenticateUrl')
  }
  // Loaded only here: ioredis is an optional peer, needed by direct mode alone.
  const { directVerifier } = await import('./direct.js')
  return await directVerifier({
    redis: direct.redis,
    redisUrl: direct.redisUrl,
    keyPrefix: direct.keyPrefix ?? DEFAULT_KEY_PREFIX,
    timeoutMs: direct.timeoutMs === undefined ? 500 : positiveNumber(direct.timeoutMs, 'timeoutMs'),
    onError,
    idleTimeout: direct.idleTimeout === true
  })
}

const guard: FastifyPluginAsync<AuthTokenGuardOptions> = async (fastify, options) => {
  let cache: PositiveCache | undefined
  if (options.cache !== undefined) {
    const maxEntries = positiveNumber(options.cache.maxEntries, 'cache.maxEntries')
    cache = createPositiveCache({ maxEntries: Math.floor(maxEntries), ttlMs: positiveNumber(options.cache.ttlMs, 'cache.ttlMs') })
  }
  const log = fastify.log.child({ plugin: 'auth-token-guard' })
  const backendTrouble = throttled((message) => { log.warn({ reason: message }, 'token verification backend trouble') })
  const unverified = throttled((message) => { log.warn({ reason: message }, 'tokens could not be verified: answering 503') })
  const verifier = await openVerifier(options, backendTrouble)
  fastify.addHook('onClose', async () => { await verifier.close() })
  if (cache !== undefined) verifier.watch(cache)
  await verifier.settle(2000)

  if (!fastify.hasRequestDecorator('auth')) fastify.decorateRequest('auth', null)

  // A route with a `groups` rule gets the check as the first of its own preValidation hooks: it runs
  // after the scope's (this guard's verification among them) and before the route's schema, and a
  // route without one pays nothing. Only routes added after the guard in its scope are seen.
  fastify.addHook('onRoute', (route) => {
    const check = groupRule(route.config?.authTokenGuard, `${route.method.toString()} ${route.url}`)
    if (check === undefined) return
    const own: PreValidationHooks = route.preValidation
    route.preValidation = own === undefined ? [check] : [check, ...(Array.isArray(own) ? own : [own])]
  })

  // Callback-style, so a cached answer costs no promise and no microtask turn.
  const verifyAndSet = (request: FastifyRequest, reply: FastifyReply, token: string, hash: string, done: (error?: Error) => void): void => {
    const lookup = cache?.begin(hash)
    verifier.verify(token, hash).then((verified) => {
      if (lookup !== undefined) cache?.finish(lookup, verified?.record ?? null, verified?.remainingMs ?? 0)
      if (verified === null) {
        refuse(reply, 403)
        return
      }
      request.auth = toAuth(verified.record)
      done()
    }, (error: unknown) => {
      if (lookup !== undefined) cache?.abandon(lookup)
      // Fails closed: nobody could say, so nobody passes. The error names no token.
      unverified(error)
      refuse(reply, 503)
    }).catch((error: unknown) => {
      // Nothing above should throw; if it did, the request still gets an answer.
      unverified(error)
      if (!reply.sent) refuse(reply, 503)
    })
  }

  // preValidation: the body is parsed (a form or JSON `token` counts), the route's schema not yet applied.
  // A hook that answers does not call done: the reply is sent, the route never runs.
  fastify.addHook('preValidation', (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => {
    const presented = presentedToken(request)
    if (presented === undefined) {
      refuse(reply, 401)
      return
    }
    // Garbage never reaches the store (nor a key name): it could not be one of our tokens. A
    // refusal (a broken Bearer header, two AuthToken1 values) is no valid token: 403.
    if (presented instanceof TokenRefusal) {
      refuse(reply, 403)
      return
    }
    const { token } = presented
    // An API key (`atsk_…`) is read as a token is, by its hash (a token hash's layout,
    // the one the feed carries when it ends), but never from the cookie, which a browser
    // would send on its own: there it is no token.
    const key = isApiKeyShaped(token)
    if (key && presented.source === 'cookie') {
      refuse(reply, 401)
      return
    }
    if (!key && !isTokenShaped(token)) {
      refuse(reply, 403)
      return
    }
    const hash = key ? hashApiKey(token) : hashToken(token)
    const cached = cache?.get(hash)
    if (cached === undefined) {
      verifyAndSet(request, reply, token, hash, done)
      return
    }
    request.auth = toAuth(cached)
    done()
  })
}

export const authTokenGuard = fp(guard, { name: 'auth-token-guard', fastify: '5.x' })
export default authTokenGuard
