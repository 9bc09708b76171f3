import t from 'tap'
import { availableParallelism } from 'node:os'
import { ConfigError, defaultHashConcurrency, loadConfig } from '../src/config/config.js'

t.test('defaults follow the contract', async (t) => {
  const config = loadConfig({})
  t.match(config, {
    host: '0.0.0.0',
    port: 3000,
    databaseUrl: undefined,
    redis: undefined,
    dataDir: './data',
    tokenTtlSeconds: 43200,
    federatedTokenTtlSeconds: 86400,
    cookieSecure: true,
    cookieDomain: undefined,
    publicInternals: false,
    internalHostnames: [],
    originalUriHeader: 'x-forwarded-uri',
    bootstrapUsername: undefined,
    bootstrapReset: false,
    legacyPathLogin: true,
    maxFailedLogins: 10,
    lockoutSeconds: 60,
    maxLockoutSeconds: 900,
    maxFailedLoginsPerIp: 100,
    ipWindowSeconds: 900,
    trustProxy: false,
    bodyLimitBytes: 16384,
    argon2: { memoryCost: 19456, timeCost: 2, parallelism: 1 }
  })
})

t.test('every variable of the contract is read', async (t) => {
  const config = loadConfig({
    HOST: '127.0.0.1',
    PORT: '8080',
    DATABASE_URL: 'postgres://u@db:5432/auth',
    REDIS_URL: 'rediss://cache:6380',
    AUTH_TOKEN_TTL_SECONDS: '60',
    AUTH_FEDERATED_TOKEN_TTL_SECONDS: '120',
    AUTH_COOKIE_SECURE: 'true',
    AUTH_COOKIE_DOMAIN: 'example.internal',
    AUTH_BOOTSTRAP_USERNAME: 'admin',
    AUTH_BOOTSTRAP_PASSWORD: ' spaced secret ',
    AUTH_LEGACY_PATH_LOGIN: 'false',
    AUTH_MAX_FAILED_LOGINS: '5',
    AUTH_LOCKOUT_SECONDS: '30',
    AUTH_MAX_LOCKOUT_SECONDS: '600',
    AUTH_MAX_FAILED_LOGINS_PER_IP: '50',
    AUTH_IP_WINDOW_SECONDS: '300',
    AUTH_TRUST_PROXY: '10.0.0.0/8, 127.0.0.1'
  })
  t.match(config, {
    host: '127.0.0.1',
    port: 8080,
    databaseUrl: 'postgres://u@db:5432/auth',
    redis: { kind: 'single', url: 'rediss://cache:6380' },
    tokenTtlSeconds: 60,
    federatedTokenTtlSeconds: 120,
    cookieSecure: true,
    cookieDomain: 'example.internal',
    bootstrapUsername: 'admin',
    bootstrapPassword: ' spaced secret ',
    legacyPathLogin: false,
    maxFailedLogins: 5,
    lockoutSeconds: 30,
    maxLockoutSeconds: 600,
    maxFailedLoginsPerIp: 50,
    ipWindowSeconds: 300
  })
  t.same(config.trustProxy, ['10.0.0.0/8', '127.0.0.1'])
  t.equal(loadConfig({ AUTH_TRUST_PROXY: '2' }).trustProxy, 2)
  t.equal(loadConfig({ AUTH_TRUST_PROXY: 'true' }).trustProxy, true)
})

t.test('AUTH_BOOTSTRAP_RESET: off unless asked for, and only beside a bootstrap account', async (t) => {
  const account = { AUTH_BOOTSTRAP_USERNAME: 'admin', AUTH_BOOTSTRAP_PASSWORD: 'change-me' }
  t.equal(loadConfig(account).bootstrapReset, false, 'create-only by default')
  t.equal(loadConfig({ ...account, AUTH_BOOTSTRAP_RESET: 'true' }).bootstrapReset, true)
  t.equal(loadConfig({ ...account, AUTH_BOOTSTRAP_RESET: 'false' }).bootstrapReset, false)
  t.equal(loadConfig({ AUTH_BOOTSTRAP_RESET: 'false' }).bootstrapReset, false, 'false needs no account')
  let message = ''
  try { loadConfig({ ...account, AUTH_BOOTSTRAP_RESET: 'yes please' }) } catch (error) { message = (error as Error).message }
  t.equal(message, 'AUTH_BOOTSTRAP_RESET: expected true or false, got "yes please"', 'one line naming the variable')
})

t.test('NODE_ENV decides nothing about security: Secure cookies, no internals on the public port', async (t) => {
  for (const nodeEnv of [undefined, 'development', 'test', 'production', 'staging']) {
    const env = nodeEnv === undefined ? {} : { NODE_ENV: nodeEnv }
    const config = loadConfig(env)
    t.equal(config.cookieSecure, true, `NODE_ENV=${String(nodeEnv)}: Secure`)
    t.equal(config.publicInternals, false, `NODE_ENV=${String(nodeEnv)}: no internal surfaces on the public port`)
    t.equal(loadConfig({ ...env, AUTH_COOKIE_SECURE: 'false' }).cookieSecure, false, `NODE_ENV=${String(nodeEnv)}: AUTH_COOKIE_SECURE=false opts out`)
    t.equal(loadConfig({ ...env, AUTH_PUBLIC_INTERNALS: 'true' }).publicInternals, true, `NODE_ENV=${String(nodeEnv)}: AUTH_PUBLIC_INTERNALS=true opts in`)
  }
})

t.test('INTERNAL_HOSTNAMES and AUTH_ORIGINAL_URI_HEADER', async (t) => {
  t.same(loadConfig({ INTERNAL_HOSTNAMES: ' Auth-Internal , auth.svc.example ,[fd00::1]' }).internalHostnames, ['auth-internal', 'auth.svc.example', 'fd00::1'])
  t.throws(() => loadConfig({ INTERNAL_HOSTNAMES: 'http://auth:3001' }), { name: 'ConfigError', variable: 'INTERNAL_HOSTNAMES' })
  t.equal(loadConfig({ AUTH_ORIGINAL_URI_HEADER: 'X-Original-URI' }).originalUriHeader, 'x-original-uri')
  t.throws(() => loadConfig({ AUTH_ORIGINAL_URI_HEADER: 'X-Rewrite-Url' }), { name: 'ConfigError', variable: 'AUTH_ORIGINAL_URI_HEADER' })
})

t.test('a bad value stops the start with one line naming the variable', async (t) => {
  const cases: Array<[Record<string, string>, string]> = [
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ AUTH_TOKEN_TTL_SECONDS: '-5' }, 'AUTH_TOKEN_TTL_SECONDS'],
    [{ AUTH_TOKEN_TTL_SECONDS: '0' }, 'AUTH_TOKEN_TTL_SECONDS'],
    [{ AUTH_FEDERATED_TOKEN_TTL_SECONDS: '1.5' }, 'AUTH_FEDERATED_TOKEN_TTL_SECONDS'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'not a url' }, 'DATABASE_URL'],
    [{ REDIS_URL: 'http://cache' }, 'REDIS_URL'],
    [{ AUTH_COOKIE_SECURE: 'maybe' }, 'AUTH_COOKIE_SECURE'],
    [{ AUTH_COOKIE_DOMAIN: 'a;b' }, 'AUTH_COOKIE_DOMAIN'],
    [{ AUTH_LEGACY_PATH_LOGIN: 'sometimes' }, 'AUTH_LEGACY_PATH_LOGIN'],
    [{ AUTH_BOOTSTRAP_USERNAME: 'admin' }, 'AUTH_BOOTSTRAP_PASSWORD'],
    [{ AUTH_BOOTSTRAP_USERNAME: 'admin', AUTH_BOOTSTRAP_PASSWORD: 'x', AUTH_BOOTSTRAP_RESET: 'please' }, 'AUTH_BOOTSTRAP_RESET'],
    [{ AUTH_BOOTSTRAP_RESET: 'true' }, 'AUTH_BOOTSTRAP_RESET'],
    [{ AUTH_LOCKOUT_SECONDS: '600', AUTH_MAX_LOCKOUT_SECONDS: '60' }, 'AUTH_MAX_LOCKOUT_SECONDS'],
    [{ AUTH_MAX_FAILED_LOGINS: '1000' }, 'AUTH_MAX_FAILED_LOGINS'],
    [{ AUTH_TRUST_PROXY: 'everyone' }, 'AUTH_TRUST_PROXY'],
    [{ AUTH_ARGON2_MEMORY_KIB: '1024' }, 'AUTH_ARGON2_MEMORY_KIB'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ PORT: '3001' }, 'INTERNAL_PORT'],
    [{ PORT: '4000', INTERNAL_PORT: '4000' }, 'INTERNAL_PORT'],
    [{ HOST: '127.0.0.1', INTERNAL_HOST: '::', PORT: '4000', INTERNAL_PORT: '4000' }, 'INTERNAL_PORT']
  ]
  for (const [env, variable] of cases) {
    let caught: unknown
    try { loadConfig(env) } catch (error) { caught = error }
    t.ok(caught instanceof ConfigError, `${JSON.stringify(env)} is refused`)
    t.equal((caught as ConfigError).variable, variable)
    t.notMatch((caught as Error).message, /\n/, 'one line')
  }
})

t.test('INTERNAL_PORT may equal PORT only where the two listeners cannot meet', async (t) => {
  t.equal(loadConfig({ HOST: '10.0.0.5', PORT: '4000', INTERNAL_PORT: '4000' }).internalPort, 4000, 'two specific hosts (the internal one 127.0.0.1 by default)')
  t.equal(loadConfig({ PORT: '0', INTERNAL_PORT: '0' }).port, 0, 'both 0: each takes a free port')
})

t.test('a refused URL is not echoed (it may hold a password)', async (t) => {
  let message = ''
  try { loadConfig({ DATABASE_URL: 'mysql://root:hunter2@db/x' }) } catch (error) { message = (error as Error).message }
  t.notMatch(message, /hunter2/)
})

t.test('Redis topology: a URL, a cluster or sentinels, and only one of them', async (t) => {
  t.equal(loadConfig({}).redis, undefined, 'none: the in-process store')
  t.same(loadConfig({ REDIS_URL: 'redis://cache:6379' }).redis, { kind: 'single', url: 'redis://cache:6379' })
  t.same(loadConfig({ REDIS_CLUSTER_NODES: 'a:7000, b:7001,[::1]:7002' }).redis,
    { kind: 'cluster', nodes: [{ host: 'a', port: 7000 }, { host: 'b', port: 7001 }, { host: '::1', port: 7002 }] })
  t.same(loadConfig({ REDIS_SENTINELS: 's1:26379,s2:26379', REDIS_SENTINEL_NAME: 'tokens' }).redis,
    { kind: 'sentinel', name: 'tokens', sentinels: [{ host: 's1', port: 26379 }, { host: 's2', port: 26379 }] })
  t.equal(loadConfig({}).redisKeyPrefix, '{ats}:', 'the default prefix is a hash tag')
  const refused: Array<[Record<string, string>, string]> = [
    [{ REDIS_URL: 'redis://a', REDIS_CLUSTER_NODES: 'b:1' }, 'REDIS_CLUSTER_NODES'],
    [{ REDIS_CLUSTER_NODES: 'b:1', REDIS_SENTINELS: 'c:2' }, 'REDIS_SENTINELS'],
    [{ REDIS_CLUSTER_NODES: 'nohost' }, 'REDIS_CLUSTER_NODES'],
    [{ REDIS_SENTINELS: 'a:99999' }, 'REDIS_SENTINELS'],
    [{ REDIS_CLUSTER_NODES: 'a:7000', AUTH_REDIS_KEY_PREFIX: 'ats:' }, 'AUTH_REDIS_KEY_PREFIX']
  ]
  for (const [env, variable] of refused) {
    let caught: unknown
    try { loadConfig(env) } catch (error) { caught = error }
    t.equal((caught as ConfigError | undefined)?.variable, variable, `${JSON.stringify(env)} names ${variable}`)
  }
})

t.test('the Postgres pool and the shutdown timings', async (t) => {
  t.same(loadConfig({}).databasePool, { max: 10, connectTimeoutMs: 2000, queryTimeoutMs: 5000, idleTimeoutMs: 30_000 })
  t.same(loadConfig({ DATABASE_POOL_MAX: '25', DATABASE_QUERY_TIMEOUT_MS: '1500' }).databasePool,
    { max: 25, connectTimeoutMs: 2000, queryTimeoutMs: 1500, idleTimeoutMs: 30_000 })
  let caught: unknown
  try { loadConfig({ SHUTDOWN_DELAY_MS: '10000', SHUTDOWN_TIMEOUT_MS: '5000' }) } catch (error) { caught = error }
  t.match(caught, { variable: 'SHUTDOWN_DELAY_MS' }, 'a drain delay as long as the whole shutdown is refused')
})

t.test('hash concurrency: a core left to the event loop by default', async (t) => {
  t.same([1, 2, 3, 4, 8, 64].map(defaultHashConcurrency), [1, 1, 2, 3, 3, 3], 'cores 1, 2, 3, 4, 8, 64')
  t.equal(loadConfig({}).hashing.concurrency, defaultHashConcurrency(availableParallelism()), 'what the service uses')
  t.equal(loadConfig({ AUTH_HASH_CONCURRENCY: '2' }).hashing.concurrency, 2, 'configurable')
})
