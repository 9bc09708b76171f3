import { createServer, type Socket } from 'node:net'
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app/app.js'
import type { Config } from '../../src/config/config.js'
import { migrate } from '../../src/core/migrate.js'
import { createPostgresDatabase } from '../../src/db/postgres.js'
import type { Database } from '../../src/db/database.js'
import { createRedisTokenStore } from '../../src/core/stores/redis/token-store.js'
import type { ServiceTokenStore } from '../../src/app/backends.js'
import { buildTestApp } from '../support/app.js'
import { testConfig } from '../support/config.js'
import { freshPostgresDatabase, patientPostgres } from '../../support/postgres.js'
import { freshRedisPrefix, requireRedis } from '../../support/redis.js'
import { backendsOf, jsonObject, LogCapture } from './support.js'
import { freePort } from '../../support/processes.js'

/*
 * /health/live and /health/ready: liveness always answers;
 * readiness names each backend and answers 503 within about a second when one of them
 * is gone, and from the moment shutdown begins. Health checks stay out of the access
 * log; every other request is one JSON line with its request id.
 */

/** What readiness says a restart of the test Redis (no persistence: `.ci/run`) can lose. */
const NO_PERSISTENCE = 'every token on a restart (all sessions end; no revocation is undone) (save "", appendonly no)'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** A live Postgres database (fresh, migrated) and a live Redis store under a prefix of its own. */
async function liveDatabase (t: Test): Promise<Database> {
  const database = patientPostgres(await freshPostgresDatabase(t))
  await migrate(database)
  return database
}

async function liveRedis (t: Test, config: Config): Promise<ServiceTokenStore> {
  const store = createRedisTokenStore({ url: await requireRedis(), keyPrefix: config.redisKeyPrefix, denyTtlMs: 60_000 })
  await store.ready()
  return store
}

/** A Redis nobody answers at: every command fails fast (no offline queue), within 200 ms at worst. */
function deadRedis (): ServiceTokenStore {
  const store = createRedisTokenStore({ url: 'redis://127.0.0.1:1', denyTtlMs: 1000, commandTimeoutMs: 200 })
  store.ready().catch(() => {})
  return store
}

async function appOn (t: Test, config: Config, database: Database, tokens: ServiceTokenStore, logStream?: LogCapture): Promise<FastifyInstance> {
  const app = await buildApp(config, { backends: backendsOf(t, config, database, tokens), ...(logStream === undefined ? { logger: { level: 'silent' } } : { logStream }) })
  t.teardown(async () => { await app.close() })
  return app
}

async function ready (app: FastifyInstance): Promise<{ status: number, body: Record<string, unknown> | undefined, ms: number }> {
  const started = performance.now()
  const response = await app.inject({ url: '/health/ready' })
  return { status: response.statusCode, body: jsonObject(response.body), ms: performance.now() - started }
}

t.test('/health/live answers 200 while the process runs, whatever the backends do', async (t) => {
  const config = testConfig()
  const app = await appOn(t, config, createPostgresDatabase({ connectionString: `postgres://postgres@127.0.0.1:${await freePort()}/none`, connectionTimeoutMillis: 300 }), deadRedis())
  const live = await app.inject({ url: '/health/live' })
  t.equal(live.statusCode, 200, 'backends down: still live')
  t.same(live.json(), { status: 0, message: 'Success' })
  app.lifecycle.draining = true
  t.equal((await app.inject({ url: '/health/live' })).statusCode, 200, 'draining: still live (a restart would only lose the in-flight requests)')
  t.equal((await app.inject({ method: 'POST', url: '/health/live' })).statusCode, 405, 'other methods: 405')
})

t.test('/health/ready: 200 with every check on real and on embedded backends', async (t) => {
  const real = await buildTestApp(t, 'real')
  const onReal = await ready(real.app)
  t.equal(onReal.status, 200)
  t.same(onReal.body, { status: 0, message: 'Success', checks: { redis: 'ok', postgres: 'ok', accepting: 'yes' }, durability: { redis: NO_PERSISTENCE } })

  const embedded = await buildTestApp(t, 'embedded')
  const onEmbedded = await ready(embedded.app)
  t.equal(onEmbedded.status, 200)
  t.same(onEmbedded.body, {
    status: 0,
    message: 'Success',
    checks: { 'in-process': 'ok', pglite: 'ok', accepting: 'yes' },
    durability: { 'in-process': 'every token when the process ends (all sessions end; no revocation is undone)' }
  })
})

t.test('/health/ready: 503 naming Redis when Redis is gone, within the health timeout', async (t) => {
  const config = testConfig({ redisKeyPrefix: await freshRedisPrefix(t) })
  const app = await appOn(t, config, await liveDatabase(t), deadRedis())
  for (let i = 0; i < 3; i++) {
    const answer = await ready(app)
    t.equal(answer.status, 503, `poll ${i + 1}: 503`)
    t.same(answer.body, { status: 503, message: 'Service Unavailable', checks: { redis: 'down', postgres: 'ok', accepting: 'yes' }, durability: { redis: 'not known yet' } }, 'names redis as the one down')
  }
})

t.test('/health/ready: 503 naming Postgres when Postgres is gone, within the health timeout', async (t) => {
  const config = testConfig({ redisKeyPrefix: await freshRedisPrefix(t) })
  const closedPort = await freePort()
  const database = createPostgresDatabase({ connectionString: `postgres://postgres@127.0.0.1:${closedPort}/none`, connectionTimeoutMillis: 300 })
  const app = await appOn(t, config, database, await liveRedis(t, config))
  for (let i = 0; i < 3; i++) {
    const answer = await ready(app)
    t.equal(answer.status, 503, `poll ${i + 1}: 503`)
    t.same(answer.body, { status: 503, message: 'Service Unavailable', checks: { redis: 'ok', postgres: 'down', accepting: 'yes' }, durability: { redis: NO_PERSISTENCE } }, 'names postgres as the one down')
  }
})

t.test('/health/ready: a Postgres that accepts the connection but never answers is down after HEALTH_TIMEOUT_MS', async (t) => {
  const sockets = new Set<Socket>()
  const silent = createServer((socket) => { sockets.add(socket) })
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => { await new Promise((resolve) => silent.close(resolve)) })
  const address = silent.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  // The connection's own timeout is ten minutes: only HEALTH_TIMEOUT_MS can end the check in
  // time for this test to see an answer (no upper bound is asserted: a busy machine reaches any).
  const config = testConfig({ redisKeyPrefix: await freshRedisPrefix(t), healthTimeoutMs: 300 })
  const database = createPostgresDatabase({ connectionString: `postgres://postgres@127.0.0.1:${port}/none`, connectionTimeoutMillis: 600_000 })
  const app = await appOn(t, config, database, await liveRedis(t, config))
  const answer = await ready(app)
  t.equal(answer.status, 503)
  t.match(answer.body, { checks: { postgres: 'down', redis: 'ok' } })
  t.ok(answer.ms >= 250, `gave up after the health timeout (${Math.round(answer.ms)} ms), not before`)
  // The pool's pending connect must end before the pool can.
  for (const socket of sockets) socket.destroy()
})

t.test('/health/ready: 503 once shutdown begins (draining), with the backends still fine', async (t) => {
  const { app } = await buildTestApp(t, 'real')
  t.equal((await ready(app)).status, 200)
  app.lifecycle.draining = true
  const answer = await ready(app)
  t.equal(answer.status, 503)
  t.same(answer.body, { status: 503, message: 'Service Unavailable', checks: { redis: 'ok', postgres: 'ok', accepting: 'no' }, durability: { redis: NO_PERSISTENCE } })
  const authenticate = await app.inject({ url: '/auth/Authenticate' })
  t.equal(authenticate.statusCode, 403, 'requests are still served while draining: only readiness fails')
})

t.test('access log: health and metrics are silent; every other request is one JSON line', async (t) => {
  const capture = new LogCapture()
  // /metrics on the public port, as AUTH_PUBLIC_INTERNALS=true serves it (off by default).
  const config = testConfig({ logLevel: 'info', redisKeyPrefix: await freshRedisPrefix(t), publicInternals: true })
  const app = await appOn(t, config, await liveDatabase(t), await liveRedis(t, config), capture)
  await app.ready()

  const quiet = capture.mark()
  for (let i = 0; i < 5; i++) {
    t.equal((await app.inject({ url: '/health/live' })).statusCode, 200)
    t.equal((await app.inject({ url: '/health/ready' })).statusCode, 200)
  }
  t.equal((await app.inject({ url: '/metrics' })).statusCode, 200)
  t.same(capture.since(quiet), [], 'no line for health checks or /metrics')

  const mark = capture.mark()
  const response = await app.inject({ url: '/auth/Authenticate', headers: { 'x-request-id': 'trace-abc.123:4_5' } })
  t.equal(response.statusCode, 403)
  const lines = capture.since(mark)
  t.equal(lines.length, 1, 'exactly one line for the request')
  const line = jsonObject(lines[0] ?? '')
  t.ok(line !== undefined, 'the line is JSON')
  t.match(line, {
    level: 30,
    reqId: 'trace-abc.123:4_5',
    route: '/auth/Authenticate',
    statusCode: 403,
    responseTime: Number,
    req: { method: 'GET', url: '/auth/Authenticate' },
    msg: 'request completed'
  })
  t.ok(typeof line?.responseTime === 'number' && line.responseTime >= 0, 'latency in ms')

  const unmatched = capture.mark()
  t.equal((await app.inject({ url: '/no/such/route' })).statusCode, 404)
  const unmatchedLines = capture.since(unmatched)
  t.equal(unmatchedLines.length, 1, 'an unknown route: one line too')
  t.match(jsonObject(unmatchedLines[0] ?? ''), { route: '(unmatched)', statusCode: 404 })

  const legacy = capture.mark()
  await app.inject({ method: 'POST', url: '/auth/Login/someone/secret%20pw' })
  const legacyLines = capture.since(legacy)
  t.equal(legacyLines.length, 1)
  t.match(jsonObject(legacyLines[0] ?? ''), { route: '/auth/Login/:username/:password', statusCode: 401 }, 'the route pattern, not the path')
  t.notMatch(legacyLines[0] ?? '', /secret/, 'no password in the line')
})

t.test('LOG_LEVEL=warn: no access lines at all', async (t) => {
  const capture = new LogCapture()
  const config = testConfig({ logLevel: 'warn' })
  const { app: embedded } = await buildTestApp(t, 'embedded')
  const app = await buildApp(config, { backends: embedded.backends, logStream: capture })
  t.teardown(async () => { await app.close() })
  t.equal((await app.inject({ url: '/auth/Authenticate' })).statusCode, 403)
  t.same(capture.since(0), [])
})

t.test('x-request-id: echoed when sane, a fresh UUID otherwise', async (t) => {
  const { app } = await buildTestApp(t, 'embedded')
  const idOf = async (headers: Record<string, string>): Promise<unknown> =>
    (await app.inject({ url: '/auth/Authenticate', headers })).headers['x-request-id']

  for (const sane of ['abc', 'A.b_c:d-e', '0123456789', 'x'.repeat(128), '4f1c2d9e-1f4b-4c5e-9a7d-3b2a1c0d9e8f']) {
    t.equal(await idOf({ 'x-request-id': sane }), sane, `echoed: ${sane.slice(0, 20)}`)
  }
  const fresh = new Set<unknown>()
  for (const [what, insane] of [
    ['200 characters', 'y'.repeat(200)],
    ['129 characters', 'z'.repeat(129)],
    ['a space', 'has space'],
    ['CR LF', 'abc\r\nSet-Cookie: x=1'],
    ['a tab', 'a\tb'],
    ['a quote', 'a"b'],
    ['non-ASCII', 'é'],
    ['a slash', 'a/b'],
    ['empty', '']
  ] as const) {
    const id = await idOf({ 'x-request-id': insane })
    t.match(id, UUID, `${what}: replaced by a UUID`)
    fresh.add(id)
  }
  const none = await idOf({})
  t.match(none, UUID, 'absent: a UUID')
  fresh.add(none)
  t.equal(fresh.size, 10, 'a new one each time')
  t.match((await app.inject({ url: '/health/live', headers: { 'x-request-id': 'probe-1' } })).headers['x-request-id'], 'probe-1', 'health answers carry it too')
})
