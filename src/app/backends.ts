import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config/config.js'
import type { LimitSettings } from '../config/parts/limits.js'
import type { LoggingSettings } from '../config/parts/logging.js'
import type { RedisSettings } from '../config/parts/redis.js'
import type { TokenSettings } from '../config/parts/tokens.js'
import type { WebhookSettings } from '../config/parts/webhooks.js'
import { openDatabase, type OpenDatabaseOptions } from '../db/open.js'
import { migrateOrCheck } from '../core/migrate.js'
import type { Database } from '../db/database.js'
import { createPasswordHasher, type PasswordHasher } from '../passwords/hasher.js'
import { createThrottledLog } from '@auth-token-service/protocol/throttled-log'
import { createLdapDirectory, type Directory } from '../federation/ldap-directory.js'
import { createSqlAuditLog, type AuditLog } from '../core/stores/audit-log.js'
import type { LoginLimiter, LoginLimits } from '../core/stores/login-limiter.js'
import { createMemoryLoginLimiter } from '../core/stores/memory/login-limiter.js'
import { createMemoryTokenStore, type MemoryTokenStore } from '../core/stores/memory/token-store.js'
import { createRedisLoginLimiter } from '../core/stores/redis/login-limiter.js'
import type { RequestLimiter, RequestLimits } from '../core/stores/request-limiter.js'
import { ACCOUNT_WINDOW_MS, IDENTIFIER_WINDOW_MS, MAILS_PER_ACCOUNT, REQUESTS_PER_IDENTIFIER } from '../recovery/recovery.js'
import { createMemoryRequestLimiter } from '../core/stores/memory/request-limiter.js'
import { createRedisRequestLimiter } from '../core/stores/redis/request-limiter.js'
import { createRedisTokenStore, type RedisTokenStore } from '../core/stores/redis/token-store.js'
import type { RevocationFeed } from '../core/stores/revocation-feed.js'
import { createSqlUserStore, type UserStore } from '../core/stores/user-store.js'
import { createSqlGroupStore, type GroupStore } from '../core/stores/group-store.js'
import { createSqlApiKeyStore, type ApiKeyStore } from '../api-keys/store.js'
import { createSqlTotpStore, type TotpStore } from '../totp/store.js'
import { createSqlOidcClientStore, type OidcClientStore } from '../oidc/index.js'
import { withTimeout } from '@auth-token-service/protocol/time-limit'
import { createOutboxSignal, type OutboxSignal } from '../webhooks/signal.js'

/** A token store the service runs on: it ends tokens and feeds their revocations, in one object (one Lua script each). */
export type ServiceTokenStore = RedisTokenStore | MemoryTokenStore

export interface Backends {
  database: Database
  users: UserStore
  /** Group membership (local and directory); the accounts' reads carry their groups. */
  groupStore: GroupStore
  /** API keys' rows; their records live in `tokens`. */
  apiKeyStore: ApiKeyStore
  /** Second factors: the sealed TOTP secrets and recovery codes' hashes. */
  totp: TotpStore
  /** The OpenID Connect provider's registered clients (their secrets' hashes only). */
  oidcClientStore: OidcClientStore
  tokens: ServiceTokenStore
  /** The same object as `tokens`, as the guard-facing feed of ended tokens (the revocations route). */
  revocations: RevocationFeed
  hasher: PasswordHasher
  limiter: LoginLimiter
  audit: AuditLog
  /** Rung by the audit log when it wrote webhook outbox rows; the delivery worker answers it. */
  webhookRows: OutboxSignal
  /** The directory of federated accounts, when AUTH_LDAP_URL is set. */
  directory?: Directory | undefined
  /** Resolves true once every backend answers, false if that takes longer than `timeoutMs`. */
  ready (timeoutMs: number): Promise<boolean>
  close (): Promise<void>
}

type Log = Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>

/** Told of every backend error (connection or command), e.g. to count it. */
export type BackendErrorHook = (backend: 'redis' | 'postgres') => void

/** Errors of a backend that reconnects by itself: each counted, logged at most once per 10 s (packages/protocol/src/throttled-log.ts). */
function throttledErrorLog (log: Log, backend: 'redis' | 'postgres', hook?: BackendErrorHook): (error: Error) => void {
  const throttled = createThrottledLog()
  return (error) => {
    hook?.(backend)
    throttled(backend, (repeats) => {
      log.warn({ backend, err: { message: error.message, code: (error as { code?: unknown }).code }, repeats }, `${backend} connection error`)
    })
  }
}

export function loginLimits (config: LimitSettings): LoginLimits {
  return {
    maxFailures: config.maxFailedLogins,
    lockoutMs: config.lockoutSeconds * 1000,
    maxLockoutMs: config.maxLockoutSeconds * 1000,
    maxFailuresPerIp: config.maxFailedLoginsPerIp,
    ipWindowMs: config.ipWindowSeconds * 1000
  }
}

/**
 * The limiter beside a token store: on its Redis client, or in-process beside the in-process store.
 * `namespace` keeps another kind of failure (wrong admin keys) apart from failed logins: the same
 * rules, keys of its own (`<prefix><namespace>lf:…`, inside the prefix's hash tag).
 */
export function openLoginLimiter (config: LimitSettings & Pick<RedisSettings, 'redisKeyPrefix'>, tokens: ServiceTokenStore, namespace = ''): LoginLimiter {
  return tokens.kind === 'redis'
    ? createRedisLoginLimiter(tokens.redis, loginLimits(config), `${config.redisKeyPrefix}${namespace}`)
    : createMemoryLoginLimiter(loginLimits(config))
}

/**
 * The limit on the routes anyone may call before signing in, beside the token store as the login
 * limiter is: on Redis shared by every instance (`<prefix>rl:…` keys), else in-process.
 */
export function openPreSignInLimiter (config: Pick<LimitSettings, 'preSignInRequestsPerIp' | 'preSignInWindowSeconds'> & Pick<RedisSettings, 'redisKeyPrefix'>, tokens: ServiceTokenStore): RequestLimiter {
  const limits = { max: config.preSignInRequestsPerIp, windowMs: config.preSignInWindowSeconds * 1000 }
  return tokens.kind === 'redis'
    ? createRedisRequestLimiter(tokens.redis, limits, config.redisKeyPrefix)
    : createMemoryRequestLimiter(limits)
}

/**
 * The limits of password reset requests, beside the token store as the others: mails per account,
 * and requests per username or address (recovery/recovery.ts has the numbers).
 */
export function openRecoveryLimits (config: Pick<RedisSettings, 'redisKeyPrefix'>, tokens: ServiceTokenStore): { account: RequestLimiter, identifier: RequestLimiter } {
  const open = (limits: RequestLimits): RequestLimiter => tokens.kind === 'redis'
    ? createRedisRequestLimiter(tokens.redis, limits, config.redisKeyPrefix)
    : createMemoryRequestLimiter(limits)
  return {
    account: open({ max: MAILS_PER_ACCOUNT, windowMs: ACCOUNT_WINDOW_MS }),
    identifier: open({ max: REQUESTS_PER_IDENTIFIER, windowMs: IDENTIFIER_WINDOW_MS })
  }
}

export function openAuditLog (config: Pick<LoggingSettings, 'auditBufferSize'> & WebhookSettings, database: Database, log: Log, webhookRows?: OutboxSignal): AuditLog {
  const throttled = createThrottledLog()
  return createSqlAuditLog(database, {
    maxBuffered: config.auditBufferSize,
    webhookUrls: config.webhooks?.urls,
    onWebhookRows: webhookRows?.notify,
    onDrop: (count, total, cause) => {
      throttled('audit', (repeats) => {
        log.warn({ dropped: count, droppedTotal: total, cause: cause instanceof Error ? cause.message : String(cause), repeats }, 'audit events dropped')
      })
    }
  })
}

/** What a restart of the token store can lose, in words (readiness, the start line); undefined until Redis was read. */
export function canLose (tokens: ServiceTokenStore): string | undefined {
  if (tokens.kind === 'in-process') return 'every token when the process ends (all sessions end; no revocation is undone)'
  const persistence = tokens.lastPersistence
  return persistence === undefined ? undefined : `${persistence.canLose} (${persistence.settings})`
}

/** AUTH_IDLE_TIMEOUT_SECONDS in ms, or undefined (off). */
export const idleTimeoutMs = (config: Pick<TokenSettings, 'idleTimeoutSeconds'>): number | undefined =>
  config.idleTimeoutSeconds === undefined ? undefined : config.idleTimeoutSeconds * 1000

/** The token store the config names: Redis when REDIS_URL is set, else the in-process one. */
export function openTokenStore (config: Config, log: Log, hook?: BackendErrorHook): ServiceTokenStore {
  const denyTtlMs = config.denyTtlSeconds * 1000
  const maxTokensPerAccount = config.maxTokensPerAccount
  if (config.redis === undefined) return createMemoryTokenStore({ denyTtlMs, maxTokensPerAccount, idleTimeoutMs: idleTimeoutMs(config) })
  const store = createRedisTokenStore({
    topology: config.redis,
    keyPrefix: config.redisKeyPrefix,
    denyTtlMs,
    // An epoch must outlive every Login that could have read the one before it: the longest lifetime is ample.
    epochTtlMs: Math.max(config.tokenTtlSeconds, config.federatedTokenTtlSeconds) * 1000,
    maxTokensPerAccount,
    idleTimeoutMs: idleTimeoutMs(config),
    commandTimeoutMs: config.redisCommandTimeoutMs,
    minReplicaAcks: config.redisMinReplicaAcks,
    onError: throttledErrorLog(log, 'redis', hook),
    onCommandError: () => { hook?.('redis') },
    // At start and whenever it changes: the one line that says why every token operation answers 503.
    onEvictionPolicy: (error) => { log.error({ backend: 'redis', policy: error.policy }, error.message) },
    acceptLossyPersistence: config.acceptLossyPersistence,
    // Whenever it changes (the first reading is the start's: server.ts): what a restart can now lose.
    onPersistence: (persistence, refused) => {
      if (refused !== undefined) log.error({ backend: 'redis', persistence: persistence.settings }, refused.message)
      else log.info({ backend: 'redis', persistence: persistence.settings, canLose: persistence.canLose }, 'Redis persistence')
    }
  })
  // Start connecting now; until Redis answers, token operations answer 503.
  store.ready().catch(() => {})
  return store
}

/**
 * The user database the config names, ready for work (migrateOrCheck); closed again when it is
 * not. With `log`, accounts the embedded database's migration could not canonicalize are warned of.
 */
export async function openMigratedDatabase (config: Config, options: OpenDatabaseOptions, log?: Log): Promise<Database> {
  const database = await openDatabase(config, options)
  const tightened = database.dataDirLock?.tightened ?? 0
  if (tightened > 0) {
    log?.warn({ dataDir: database.dataDirLock?.owner.dataDir, tightened }, 'the embedded database\'s directory was open to other users: group and other access removed from it and everything in it')
  }
  try {
    const usernames = await migrateOrCheck(database)
    const unresolved = usernames === undefined ? 0 : usernames.collisions.length + usernames.refused.length
    if (usernames !== undefined && unresolved > 0) {
      log?.warn({ collisions: usernames.collisions.length, refused: usernames.refused.length }, 'accounts whose usernames collide or have no canonical form cannot log in: run `auth-token-service migrate` for the list')
    }
  } catch (error) {
    await database.close().catch(() => {})
    throw error
  }
  return database
}

/** Opens the user database and the token store that the config names, in one place. */
export async function openBackends (config: Config, log: Log, hook?: BackendErrorHook): Promise<Backends> {
  const database = await openMigratedDatabase(config, { onPoolError: throttledErrorLog(log, 'postgres', hook), command: 'serve' }, log)
  const tokens = openTokenStore(config, log, hook)
  log.info({
    users: database.kind === 'pglite' ? `embedded PGlite in ${config.dataDir}` : 'Postgres (DATABASE_URL)',
    tokens: config.redis === undefined ? 'in-process store (tokens end when the process does)' : `Redis (${config.redis.kind})`
  }, database.kind === 'pglite' && config.redis === undefined
    ? 'running on the embedded default: no DATABASE_URL or REDIS_URL set'
    : 'backends chosen')
  const webhookRows = createOutboxSignal()
  return assembleBackends(config, { database, tokens, audit: openAuditLog(config, database, log, webhookRows), webhookRows, hook, log })
}

/**
 * The backends over a database and a token store that are already open: the one
 * place the stores, the hasher (at the configured argon2 policy and limits), the limiter
 * and the directory are put together, for the service (openBackends), the command line
 * and the tests, which hand in their own parts. `close` closes all of it. `log` hears the
 * directory's warnings (a group it names that has no name here).
 */
export function assembleBackends (config: Config, parts: { database: Database, tokens: ServiceTokenStore, audit?: AuditLog, webhookRows?: OutboxSignal, hook?: BackendErrorHook, log?: Log }): Backends {
  const { database, tokens, hook } = parts
  const webhookRows = parts.webhookRows ?? createOutboxSignal()
  const audit = parts.audit ?? createSqlAuditLog(database, { webhookUrls: config.webhooks?.urls, onWebhookRows: webhookRows.notify })
  const hasher = createPasswordHasher(config.argon2, config.hashing)
  return {
    database,
    users: createSqlUserStore(database, () => { hook?.('postgres') }),
    groupStore: createSqlGroupStore(database, () => { hook?.('postgres') }),
    apiKeyStore: createSqlApiKeyStore(database, () => { hook?.('postgres') }),
    totp: createSqlTotpStore(database, () => { hook?.('postgres') }),
    oidcClientStore: createSqlOidcClientStore(database, () => { hook?.('postgres') }),
    tokens,
    revocations: tokens,
    hasher,
    limiter: openLoginLimiter(config, tokens),
    audit,
    webhookRows,
    directory: config.ldap === undefined ? undefined : createLdapDirectory(config.ldap, { log: parts.log }),
    ready: async (timeoutMs) => await withTimeout(tokens.ready().then(() => true, () => false), timeoutMs, () => false),
    async close () {
      await audit.close().catch(() => {})
      await Promise.allSettled([tokens.close(), database.close(), hasher.close()])
    }
  }
}
