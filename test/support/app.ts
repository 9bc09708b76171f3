import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { createAccountAdmin, type AccountAdmin } from '../../src/core/accounts.js'
import { buildApp } from '../../src/app/app.js'
import type { PasswordPolicy } from '../../src/passwords/policy.js'
import type { PasswordHasher } from '../../src/passwords/hasher.js'
import { assembleBackends } from '../../src/app/backends.js'
import type { Config } from '../../src/config/config.js'
import { migrate } from '../../src/core/migrate.js'
import type { Database } from '../../src/db/database.js'
import { createMemoryTokenStore } from '../../src/core/stores/memory/token-store.js'
import { createRedisTokenStore, type RedisTokenStore } from '../../src/core/stores/redis/token-store.js'
import type { RedisTopology } from '../../src/core/stores/redis/client.js'
import { idleTimeoutMs, type ServiceTokenStore } from '../../src/app/backends.js'
import { testConfig } from './config.js'
import { freshPglite } from './pglite.js'
import { freshPostgresDatabase, patientPostgres } from '../../support/postgres.js'
import { freshRedisPrefix, requireRedis, TEST_REDIS_COMMAND_TIMEOUT_MS } from '../../support/redis.js'

export type BackendKind = 'real' | 'embedded'

/** For test fixtures only: any password of 1–1024 bytes. */
const FIXTURE_PASSWORDS: PasswordPolicy = { minLength: 1, blocklist: false, refuseUsername: false }

/**
 * The app's account admin with fixture passwords allowed ('pw', 'right'): for tests whose
 * subject is not the password policy (test/integration/passwords/policy.test.ts is).
 */
export function fixtureAccounts (app: FastifyInstance): AccountAdmin {
  // Observed as the app's own admin is (app.ts), so that metrics count what it does.
  const { metrics, backends } = app
  return createAccountAdmin({ ...backends, audit: metrics.countEvents(backends.audit), hasher: metrics.timeHashing(backends.hasher), passwordPolicy: FIXTURE_PASSWORDS, keyHashes: app.apiKeys })
}

export interface TestApp {
  app: FastifyInstance
  config: Config
  database: Database
  tokens: ServiceTokenStore
  /** Set for the 'real' kind: the Redis store, with its client and key prefix. */
  redisStore?: RedisTokenStore
  redisPrefix?: string
  /** Creates an account through the service's own admin (argon2id at the configured policy). */
  addUser (username: string, password: string, federated?: boolean): Promise<void>
}

/**
 * The app on real backends: 'real' is Postgres (a fresh database) and Redis (a key
 * prefix of its own); 'embedded' is in-memory PGlite and the in-process store.
 * Everything is closed at the end of the test.
 */
export async function buildTestApp (t: Test, kind: BackendKind = 'real', overrides: Partial<Config> = {}, options: { redis?: RedisTopology, logStream?: NodeJS.WritableStream, hasher?: (config: Config) => PasswordHasher } = {}): Promise<TestApp> {
  // Every Redis key of this app (tokens and login limits alike) under a prefix of its own.
  const redisPrefix = kind === 'real' ? await freshRedisPrefix(t) : undefined
  const config = testConfig(redisPrefix === undefined ? overrides : { redisKeyPrefix: redisPrefix, ...overrides })
  let database: Database
  let tokens: ServiceTokenStore
  let redisStore: RedisTokenStore | undefined
  if (kind === 'real') {
    database = patientPostgres(await freshPostgresDatabase(t))
    redisStore = createRedisTokenStore({
      topology: options.redis ?? { kind: 'single', url: await requireRedis() },
      keyPrefix: config.redisKeyPrefix,
      denyTtlMs: config.denyTtlSeconds * 1000,
      maxTokensPerAccount: config.maxTokensPerAccount,
      idleTimeoutMs: idleTimeoutMs(config),
      // The service's 500 ms when a test sets it (the failover tests stop a node and count on it).
      commandTimeoutMs: overrides.redisCommandTimeoutMs ?? TEST_REDIS_COMMAND_TIMEOUT_MS
    })
    await redisStore.ready()
    tokens = redisStore
  } else {
    database = await freshPglite()
    tokens = createMemoryTokenStore({ denyTtlMs: config.denyTtlSeconds * 1000, maxTokensPerAccount: config.maxTokensPerAccount, idleTimeoutMs: idleTimeoutMs(config) })
  }
  try {
    await migrate(database)
  } catch (error) {
    // Closed here, or their open sockets keep the test process alive until tap's timeout.
    await database.close().catch(() => {})
    await redisStore?.close().catch(() => {})
    throw error
  }
  const assembled = assembleBackends(config, { database, tokens })
  const hasher = options.hasher?.(config)
  // A hasher of the test's own, closed with the rest; the one assembled is never used, so it never starts a thread.
  const backends = hasher === undefined ? assembled : { ...assembled, hasher, close: async () => { await Promise.all([assembled.close(), hasher.close()]) } }
  // With a logStream, the service's own logger (access lines and all) writes into it.
  const app = await buildApp(config, options.logStream === undefined ? { backends, logger: { level: 'silent' } } : { backends, logStream: options.logStream })
  t.teardown(async () => {
    await app.close()
    await backends.close()
  })
  return {
    app,
    config,
    database,
    tokens,
    redisStore,
    redisPrefix,
    async addUser (username, password, federated = false) {
      // Fixtures use short, made-up passwords ('pw', 'right'): the password policy has tests of
      // its own (test/integration/passwords/policy.test.ts), and Login checks any stored hash alike.
      await fixtureAccounts(app).add(username, password, federated)
    }
  }
}
