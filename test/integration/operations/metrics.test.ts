import t from 'tap'
import type { FastifyInstance, FastifyServerOptions, InjectOptions } from 'fastify'
import { buildApp } from '../../../src/app/app.js'
import { migrate } from '../../../src/core/migrate.js'
import { createMetrics } from '../../../src/metrics/metrics.js'
import { OWASP_MINIMUM_POLICY } from '../../../src/passwords/hasher.js'
import { createMemoryTokenStore } from '../../../src/core/stores/memory/token-store.js'
import { buildTestApp } from '../../support/app.js'
import { testConfig } from '../../support/config.js'
import { freshPglite } from '../../support/pglite.js'
import { freshRedisPrefix, requireRedis } from '../../../support/redis.js'
import { backendsOf, LogCapture, metricType, sample } from '../../operations/support.js'
import { freePort, tempDir } from '../../../support/processes.js'
import { migratedDatabaseUrl } from '../../../support/postgres.js'
import { startService } from '../../../support/service.js'

/*
 * Prometheus /metrics: requests by route, method and status with a
 * latency histogram, login outcomes, tokens issued and terminated, the argon2 queue and
 * its timings, and Node's default metrics; with METRICS_PORT, on that port only.
 */

const PROMETHEUS_TYPE = /^text\/plain; version=0\.0\.4; charset=utf-8$/

async function scrape (app: FastifyInstance): Promise<string> {
  const response = await app.inject({ url: '/metrics' })
  if (response.statusCode !== 200) throw new Error(`/metrics answered ${response.statusCode}`)
  return response.body
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

// These tests scrape the app in process: its public port serves /metrics only when asked.
const SCRAPED = { publicInternals: true }

t.test('counts requests, login outcomes, tokens and hashing, beside the default metrics', async (t) => {
  const { app, addUser } = await buildTestApp(t, 'real', { ...SCRAPED, maxFailedLogins: 2, maxFailedLoginsPerIp: 3 })
  await addUser('ann', 'pw of ann')
  await addUser('bob', 'pw of bob')

  const send = async (options: InjectOptions) => await app.inject(options)
  const login = async (ip: string, username: string, password: string, token?: string) => await send({
    method: 'POST',
    url: '/auth/Login',
    remoteAddress: ip,
    headers: FORM,
    payload: new URLSearchParams({ username, password, ...(token === undefined ? {} : { token }) }).toString()
  })
  const tokenOf = (response: { json: () => unknown }): string => {
    const body = response.json()
    return typeof body === 'object' && body !== null && 'token' in body && typeof body.token === 'string' ? body.token : ''
  }

  // Three tokens issued, one of them refreshed.
  const first = await login('198.51.100.1', 'ann', 'pw of ann')
  t.equal(first.statusCode, 200)
  const second = await login('198.51.100.1', 'ann', 'pw of ann')
  const third = await login('198.51.100.1', 'bob', 'pw of bob')
  t.equal((await login('198.51.100.1', 'bob', 'pw of bob', tokenOf(third))).statusCode, 200, 'a refresh')
  for (let i = 0; i < 3; i++) t.equal((await send({ url: `/auth/Authenticate/${tokenOf(first)}` })).statusCode, 200)
  t.equal((await send({ url: '/auth/Authenticate' })).statusCode, 403)
  // Terminated: one by Logout, then the rest of ann's by revoke-all.
  t.equal((await send({ method: 'POST', url: `/auth/Logout/${tokenOf(first)}` })).statusCode, 200)
  t.equal((await app.accounts.revokeSessions('ann')).ended, 1, 'revoke-all ended ann\'s other token')
  t.equal((await send({ url: `/auth/Authenticate/${tokenOf(second)}` })).statusCode, 403)

  // Failed twice: ann is locked; the next attempt, right password or not, is refused.
  t.equal((await login('198.51.100.2', 'ann', 'wrong')).statusCode, 401)
  t.equal((await login('198.51.100.2', 'ann', 'wrong')).statusCode, 401)
  t.equal((await login('198.51.100.2', 'ann', 'pw of ann')).statusCode, 429, 'locked')
  // Three failures from one address, on three accounts: the address is limited.
  for (const name of ['nobody1', 'nobody2', 'nobody3']) t.equal((await login('198.51.100.3', name, 'wrong')).statusCode, 401)
  t.equal((await login('198.51.100.3', 'bob', 'pw of bob')).statusCode, 429, 'rate-limited by address')

  const response = await send({ url: '/metrics' })
  t.equal(response.statusCode, 200)
  t.match(response.headers['content-type'], PROMETHEUS_TYPE, 'Prometheus text format')
  const text = response.body
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ') || line.startsWith('# TYPE ')) continue
    if (!/^[A-Za-z_:][A-Za-z0-9_:]*(\{.*\})? (-?[0-9.e+-]+|NaN|[+-]Inf)$/.test(line)) t.fail(`not a sample line: ${line}`)
  }

  t.equal(metricType(text, 'http_requests_total'), 'counter')
  t.equal(sample(text, 'http_requests_total', { route: '/auth/Login', method: 'POST', status: '200' }), 4, 'Login 200 ×4')
  t.equal(sample(text, 'http_requests_total', { route: '/auth/Login', method: 'POST', status: '401' }), 5, 'Login 401 ×5')
  t.equal(sample(text, 'http_requests_total', { route: '/auth/Login', method: 'POST', status: '429' }), 2, 'Login 429 ×2')
  t.equal(sample(text, 'http_requests_total', { route: '/auth/Authenticate/:token', method: 'GET', status: '200' }), 3, 'by route pattern, never by token')
  t.equal(sample(text, 'http_requests_total', { route: '/auth/Authenticate/:token', method: 'GET', status: '403' }), 1)
  t.equal(sample(text, 'http_requests_total', { route: '/auth/Authenticate', method: 'GET', status: '403' }), 1)
  t.equal(sample(text, 'http_requests_total', { route: '/auth/Logout/:token', method: 'POST', status: '200' }), 1)
  t.notMatch(text, tokenOf(first), 'no token in any label')

  t.equal(metricType(text, 'http_request_duration_seconds'), 'histogram')
  t.equal(sample(text, 'http_request_duration_seconds_bucket', { route: '/auth/Login', method: 'POST', status: '200', le: '+Inf' }), 4)
  t.equal(sample(text, 'http_request_duration_seconds_count', { route: '/auth/Login', method: 'POST', status: '200' }), 4)
  t.ok((sample(text, 'http_request_duration_seconds_sum', { route: '/auth/Login', method: 'POST', status: '200' }) ?? 0) > 0, 'latency summed, in seconds')

  t.equal(metricType(text, 'auth_logins_total'), 'counter')
  t.equal(sample(text, 'auth_logins_total', { outcome: 'success' }), 4, 'success (the refresh included)')
  t.equal(sample(text, 'auth_logins_total', { outcome: 'failed' }), 5, 'failed')
  t.equal(sample(text, 'auth_logins_total', { outcome: 'locked' }), 1, 'locked')
  t.equal(sample(text, 'auth_logins_total', { outcome: 'rate_limited' }), 1, 'rate_limited')

  t.equal(sample(text, 'auth_tokens_issued_total'), 3, 'issued (a refresh is not a new token)')
  t.equal(sample(text, 'auth_tokens_refreshed_total'), 1, 'refreshed')
  t.equal(sample(text, 'auth_tokens_terminated_total'), 2, 'terminated: the Logout and the revoke-all')

  t.equal(metricType(text, 'auth_password_hash_queue_depth'), 'gauge')
  t.equal(sample(text, 'auth_password_hash_queue_depth'), 0, 'nothing hashing now')
  t.equal(metricType(text, 'auth_password_hash_duration_seconds'), 'histogram')
  t.equal(sample(text, 'auth_password_hash_duration_seconds_count', { operation: 'hash' }), 2, 'two accounts created: two hashes')
  t.equal(sample(text, 'auth_password_hash_duration_seconds_count', { operation: 'verify' }), 9, 'a verify per login that was not refused (unknown users too)')
  t.ok((sample(text, 'auth_password_hash_duration_seconds_sum', { operation: 'verify' }) ?? 0) > 0)

  t.equal(metricType(text, 'auth_backend_errors_total'), 'counter', 'backend errors are declared')
  t.equal(metricType(text, 'auth_audit_events_dropped_total'), 'counter')
  t.equal(sample(text, 'auth_audit_events_dropped_total'), 0)
  t.equal(metricType(text, 'auth_log_lines_dropped_total'), 'counter')
  t.equal(sample(text, 'auth_log_lines_dropped_total'), 0)

  // Node's defaults.
  t.equal(metricType(text, 'nodejs_eventloop_lag_seconds'), 'gauge')
  t.ok((sample(text, 'nodejs_eventloop_lag_seconds') ?? -1) >= 0, 'event-loop lag')
  for (const name of ['nodejs_eventloop_lag_p99_seconds', 'process_cpu_user_seconds_total', 'process_resident_memory_bytes',
    'process_start_time_seconds', 'nodejs_heap_size_used_bytes', 'nodejs_active_handles_total', 'nodejs_gc_duration_seconds']) {
    t.ok(metricType(text, name) !== undefined, `default metric ${name}`)
  }
  t.match(sample(text, 'nodejs_version_info', { version: process.version }), 1, 'the Node version')
})

t.test('what is dropped elsewhere (audit events, log lines) is a counter that follows its running total', async (t) => {
  const totals = { audit: 0, log: 0 }
  const metrics = createMetrics({ hashQueueDepth: () => 0, auditDropped: () => totals.audit, logLinesDropped: () => totals.log })
  const read = async (): Promise<[number | undefined, number | undefined]> => {
    const text = await metrics.exposition()
    return [sample(text, 'auth_audit_events_dropped_total'), sample(text, 'auth_log_lines_dropped_total')]
  }
  t.same(await read(), [0, 0])
  totals.audit = 3
  totals.log = 120
  t.same(await read(), [3, 120])
  totals.log = 121
  t.same(await read(), [3, 121], 'each scrape brings it up to the total')
  t.same(await read(), [3, 121], 'and counts nothing twice')
  t.equal(metricType(await metrics.exposition(), 'auth_audit_events_dropped_total'), 'counter')
})

t.test('every request is counted once, whatever logger the app has', async (t) => {
  // Fastify reports each finished response to the app's log controller, which counts it; an app
  // asked for no logger (logger: false) gets a silent one, so it counts the same way. None may miss
  // a request nor count one twice, and a route that logs nothing (/health/live) is counted all the same.
  const loggers: Array<[string, { logger: FastifyServerOptions['logger'] } | { logStream: LogCapture }]> = [
    ['the service\'s own access log', { logStream: new LogCapture() }],
    ['a caller\'s logger', { logger: { level: 'silent' } }],
    ['no logger', { logger: false }]
  ]
  for (const [name, logging] of loggers) {
    // Level info: the access log writes its lines, and the metrics are counted beside them.
    const config = testConfig({ ...SCRAPED, logLevel: 'info' })
    const database = await freshPglite()
    await migrate(database)
    const app = await buildApp(config, { backends: backendsOf(t, config, database, createMemoryTokenStore({ denyTtlMs: 60_000 })), ...logging })
    t.teardown(async () => { await app.close() })
    t.equal((await app.inject({ url: '/auth/Authenticate' })).statusCode, 403)
    for (let i = 0; i < 2; i++) t.equal((await app.inject({ method: 'POST', url: '/auth/Authenticate/not-a-token' })).statusCode, 403)
    t.equal((await app.inject({ url: '/nowhere' })).statusCode, 404)
    t.equal((await app.inject({ url: '/health/live' })).statusCode, 200)
    const text = await scrape(app)
    t.equal(sample(text, 'http_requests_total', { route: '/auth/Authenticate', method: 'GET', status: '403' }), 1, `${name}: GET once`)
    t.equal(sample(text, 'http_requests_total', { route: '/auth/Authenticate/:token', method: 'POST', status: '403' }), 2, `${name}: POST twice`)
    t.equal(sample(text, 'http_requests_total', { route: '(unmatched)', method: 'GET', status: '404' }), 1, `${name}: an unmatched path`)
    t.equal(sample(text, 'http_requests_total', { route: '/health/live', method: 'GET', status: '200' }), 1, `${name}: a route that logs nothing`)
    t.equal(sample(text, 'http_request_duration_seconds_count', { route: '/auth/Authenticate/:token', method: 'POST', status: '403' }), 2, `${name}: latency observed per request`)
    if ('logStream' in logging) {
      const lines = logging.logStream.since(0).filter((line) => line.includes('"request completed"'))
      t.equal(lines.length, 4, 'the access log still has its line per request (not /health/live)')
    }
  }
})

t.test('the hash queue depth shows logins waiting for argon2', async (t) => {
  // The service's own argon2 floor (tens of ms a verify), not the fast suite's cheapest: with
  // microsecond hashes the eight Logins drained before the scrape (depth 0 in CI on Node 24).
  const { app, addUser } = await buildTestApp(t, 'real', { ...SCRAPED, argon2: OWASP_MINIMUM_POLICY, hashing: { concurrency: 1, maxQueued: 64 } })
  await addUser('cat', 'pw of cat')
  const logins = Array.from({ length: 8 }, async () => await app.inject({
    method: 'POST', url: '/auth/Login', headers: FORM, payload: 'username=cat&password=pw%20of%20cat'
  }))
  const deadline = Date.now() + 5000
  while (app.backends.hasher.queueDepth() < 2 && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve))
  const during = await scrape(app)
  t.ok((sample(during, 'auth_password_hash_queue_depth') ?? 0) >= 1, `depth while logins wait: ${sample(during, 'auth_password_hash_queue_depth')}`)
  for (const response of await Promise.all(logins)) t.equal(response.statusCode, 200)
  t.equal(sample(await scrape(app), 'auth_password_hash_queue_depth'), 0, 'back to 0')
})

t.test('whatever NODE_ENV says, the public app serves none of the internal surfaces unless asked', async (t) => {
  for (const nodeEnv of ['development', 'test', 'production']) {
    const { app } = await buildTestApp(t, 'embedded', { nodeEnv })
    for (const path of ['/metrics', '/docs', '/docs/json', '/openapi.json', '/auth/revocations']) {
      const response = await app.inject({ url: path })
      t.equal(response.statusCode, 404, `NODE_ENV=${nodeEnv}: ${path}`)
      t.same(response.json(), { status: 404, message: 'Not Found' }, `NODE_ENV=${nodeEnv}: ${path}: the usual 404`)
    }
    t.equal((await app.inject({ url: '/auth/Authenticate' })).statusCode, 403, `NODE_ENV=${nodeEnv}: the operations are there`)
  }
})

t.test('AUTH_PUBLIC_INTERNALS=true serves them on the public port; the feed there needs its key unless the port is loopback only', async (t) => {
  const KEY = 'r'.repeat(40)
  const wildcard = await buildTestApp(t, 'embedded', { publicInternals: true })
  for (const path of ['/metrics', '/docs/json', '/openapi.json']) {
    t.equal((await wildcard.app.inject({ url: path })).statusCode, 200, `${path}: served`)
  }
  t.equal((await wildcard.app.inject({ url: '/auth/revocations' })).statusCode, 404, 'HOST=0.0.0.0, no key: the feed is off, never open')
  const keyed = await buildTestApp(t, 'embedded', { publicInternals: true, revocationsKey: KEY })
  t.equal((await keyed.app.inject({ url: '/auth/revocations' })).statusCode, 401, 'with a key: a subscriber without it is refused')
  // Open without a key only where this machine alone reaches it: read the head, then hang up.
  const loopback = await buildTestApp(t, 'embedded', { publicInternals: true, host: '127.0.0.1' })
  const origin = await loopback.app.listen({ host: '127.0.0.1', port: 0 })
  const controller = new AbortController()
  const feed = await fetch(`${origin}/auth/revocations`, { signal: controller.signal })
  t.equal(feed.status, 200, 'HOST=127.0.0.1, no key: the first-run feed answers')
  controller.abort()
})

t.test('the built service, NODE_ENV unset, serves /metrics on the internal listener only', async (t) => {
  const metricsPort = await freePort()
  const service = await startService(t, {
    DATABASE_URL: await migratedDatabaseUrl(t),
    REDIS_URL: await requireRedis(),
    AUTH_REDIS_KEY_PREFIX: await freshRedisPrefix(t),
    INTERNAL_PORT: String(metricsPort)
  }, { cwd: await tempDir(t, 'ats-metrics-') })
  const metricsBase = `http://127.0.0.1:${metricsPort}`
  const listening = /internal listener: \/metrics, \/docs, \/openapi.json, \/auth\/revocations/
  t.match(await service.outputMatching(listening), listening)

  t.equal((await fetch(`${service.baseUrl}/auth/Authenticate`)).status, 403)
  const onMain = await fetch(`${service.baseUrl}/metrics`)
  t.equal(onMain.status, 404, 'not on the public port')
  t.same(await onMain.json(), { status: 404, message: 'Not Found' })

  const scraped = await fetch(`${metricsBase}/metrics`)
  t.equal(scraped.status, 200, 'on the metrics port')
  t.match(scraped.headers.get('content-type'), PROMETHEUS_TYPE)
  const text = await scraped.text()
  t.equal(sample(text, 'http_requests_total', { route: '/auth/Authenticate', method: 'GET', status: '403' }), 1, 'the public port\'s requests, counted')
  t.equal(sample(text, 'http_requests_total', { route: '(unmatched)', method: 'GET', status: '404' }), 1, 'the refused /metrics, as an unmatched route')
  t.ok(metricType(text, 'nodejs_eventloop_lag_seconds') !== undefined)

  // The operations /docs describes answer there too, as the public port does (its Try it out);
  // nothing else of the public port does.
  for (const [path, status] of [['/auth/Authenticate', 403], ['/health/ready', 200], ['/auth/signin', 404], ['/nowhere', 404]] as const) {
    t.equal((await fetch(`${metricsBase}${path}`)).status, status, `${path} on the internal listener: ${status}`)
  }
  for (const path of ['/openapi.json', '/docs', '/auth/revocations']) {
    t.equal((await fetch(`${service.baseUrl}${path}`)).status, 404, `${path}: not on the public port`)
  }
  const document = await fetch(`${metricsBase}/openapi.json`)
  t.equal(document.status, 200, 'the API document is on the internal listener')
  t.ok('/auth/Login' in (await document.json() as { paths: Record<string, unknown> }).paths, 'describing the public operations')
  t.equal((await fetch(`${metricsBase}/docs`)).status, 200, 'and /docs')
  // No AUTH_REVOCATIONS_KEY: the feed answers on the loopback-only internal listener (a first run), and only there.
  const controller = new AbortController()
  const feed = await fetch(`${metricsBase}/auth/revocations`, { signal: controller.signal })
  t.equal(feed.status, 200, 'no key, INTERNAL_HOST=127.0.0.1: the feed answers on the internal listener')
  controller.abort()
  t.notMatch(service.output(), /AUTH_REVOCATIONS_KEY is not set/, 'nothing to warn about on the loopback')

  service.kill('SIGTERM')
  t.equal((await service.exited).code, 0, 'SIGTERM ends it cleanly')
  const after = await fetch(`${metricsBase}/metrics`).then(() => 'answered', () => 'refused')
  t.equal(after, 'refused', 'the metrics port is closed too')
})

t.test('METRICS_PORT still works, as a deprecated name of INTERNAL_PORT, with a warning', async (t) => {
  const metricsPort = await freePort()
  const service = await startService(t, { METRICS_PORT: String(metricsPort), INTERNAL_PORT: '' /* unset: METRICS_PORT names the port */ }, { cwd: await tempDir(t, 'ats-metrics-') })
  t.equal((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status, 200)
  t.match(await service.outputMatching(/METRICS_PORT is now INTERNAL_PORT/), /METRICS_PORT is now INTERNAL_PORT/)
})
