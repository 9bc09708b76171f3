import { createHash, randomBytes } from 'node:crypto'
import { trace } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node'
import { FastifyOtelInstrumentation } from '@fastify/otel'
import Fastify from 'fastify'
import t from 'tap'
import { authTokenGuard } from '@auth-token-service/guard'
import { startOtlpReceiver, type ReceivedSpan } from '../../support/otlp-receiver.js'
import { migratedDatabaseUrl } from '../../support/postgres.js'
import { freshRedisPrefix, requireRedis } from '../../support/redis.js'
import { startService, type ServiceProcess } from '../../support/service.js'
import { startDirectory } from '../support/slapd.js'

/*
 * Tracing: the BUILT service with OTEL_EXPORTER_OTLP_ENDPOINT set exports to a
 * receiver this test starts (OTLP/HTTP, JSON), through the real SDK and exporter. A protected
 * service (Fastify with @fastify/otel and the guard, in this process, with its own SDK)
 * calls the service; the spans must link into one trace, and no span may carry a secret.
 */

const SERVER = 2
const USERNAME = 'trace-ann'
const PASSWORD = `pw-${randomBytes(9).toString('base64url')}`
const INTROSPECTION_ID = 'gateway'
const INTROSPECTION_SECRET = `is-${randomBytes(12).toString('base64url')}`
// The fixture directory's user (test/fixtures/directory.ldif).
const LDAP_USER = 'alice'
const LDAP_PASSWORD = 'alice-directory-pw'

/** The chain of parents of `span` among `spans`, nearest first. */
function ancestors (spans: ReceivedSpan[], span: ReceivedSpan): ReceivedSpan[] {
  const chain: ReceivedSpan[] = []
  let parent = spans.find((s) => s.spanId === span.parentSpanId)
  while (parent !== undefined) {
    chain.push(parent)
    const next = parent
    parent = spans.find((s) => s.spanId === next.parentSpanId)
  }
  return chain
}

function serverSpanOf (spans: ReceivedSpan[], service: string, route: string): ReceivedSpan[] {
  return spans.filter((s) => s.service === service && s.kind === SERVER && s.attributes['http.route'] === route)
}

async function login (service: ServiceProcess, init: RequestInit, path = '/auth/Login'): Promise<{ status: number, token: string }> {
  const response = await fetch(service.baseUrl + path, { method: 'POST', ...init })
  const body = await response.json() as { token?: string }
  return { status: response.status, token: body.token ?? '' }
}

const form = (fields: Record<string, string>): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() })

t.test('tracing on: spans with parent links from a guarded service through the token service to Redis, and no secret in any', async (t) => {
  const receiver = await startOtlpReceiver(t)
  const directory = await startDirectory(t)
  const service = await startService(t, {
    DATABASE_URL: await migratedDatabaseUrl(t),
    REDIS_URL: await requireRedis(),
    AUTH_REDIS_KEY_PREFIX: await freshRedisPrefix(t),
    AUTH_BOOTSTRAP_USERNAME: USERNAME,
    AUTH_BOOTSTRAP_PASSWORD: PASSWORD,
    AUTH_INTROSPECTION_CLIENTS: `${INTROSPECTION_ID}:${INTROSPECTION_SECRET}`,
    AUTH_LDAP_URL: directory.url,
    AUTH_LDAP_BIND_DN: `uid={username},ou=people,${directory.suffix}`,
    AUTH_LDAP_AUTO_PROVISION: 'true',
    LOG_LEVEL: 'info',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '50',
    OTEL_SERVICE_NAME: 'ats-under-test'
  })

  // The protected service: its own SDK (this process), @fastify/otel, and the guard in HTTP mode.
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'orders-under-test' }),
    spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${receiver.endpoint}/v1/traces` }))]
  })
  provider.register({ propagator: new W3CTraceContextPropagator() })
  t.teardown(async () => {
    await provider.shutdown()
    trace.disable()
  })
  const otel = new FastifyOtelInstrumentation({ instrumentHooks: false })
  otel.setTracerProvider(provider)
  const orders = Fastify()
  t.teardown(async () => { await orders.close() })
  await orders.register(otel.plugin())
  await orders.register(async (scope) => {
    await scope.register(authTokenGuard, { authenticateUrl: `${service.baseUrl}/auth/Authenticate` })
    scope.get('/orders', async (request) => ({ owner: request.auth?.username }))
    scope.post('/orders', async (request) => ({ owner: request.auth?.username }))
  })
  const ordersUrl = await orders.listen({ port: 0, host: '127.0.0.1' })

  const secrets = new Map<string, string>([
    ['password', PASSWORD],
    ['LDAP password', LDAP_PASSWORD],
    ['introspection secret', INTROSPECTION_SECRET],
    ['introspection Basic credentials', Buffer.from(`${INTROSPECTION_ID}:${INTROSPECTION_SECRET}`).toString('base64')]
  ])
  const addToken = (name: string, token: string): string => {
    t.match(token, /^2[A-Za-z0-9_-]{45}$/, `${name}: a token`)
    secrets.set(name, token)
    // What Redis keys are made of: a statement with arguments would carry it.
    secrets.set(`${name} (its SHA-256)`, createHash('sha256').update(token).digest('base64url'))
    return token
  }

  t.test('Login, Authenticate through the guard, Logout: the expected spans, linked', async (t) => {
    const { status, token } = await login(service, form({ username: USERNAME, password: PASSWORD }))
    t.equal(status, 200, 'logged in')
    addToken('token from Login', token)

    const guarded = await fetch(`${ordersUrl}/orders`, { headers: { authorization: `Bearer ${token}` } })
    t.same(await guarded.json(), { owner: USERNAME }, 'the guard let the request through')
    const guardedPost = await fetch(`${ordersUrl}/orders`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{"item":"tea"}' })
    t.same(await guardedPost.json(), { owner: USERNAME }, 'a request with a body too')

    const logout = await fetch(`${service.baseUrl}/auth/Logout`, form({ token }))
    t.equal(logout.status, 200, 'logged out')

    const spans = await receiver.waitFor('Logout span with its Redis child', (spans) =>
      serverSpanOf(spans, 'ats-under-test', '/auth/Logout').length === 1 &&
      serverSpanOf(spans, 'ats-under-test', '/auth/Authenticate').length === 2 &&
      serverSpanOf(spans, 'orders-under-test', '/orders').length === 2 &&
      spans.some((s) => s.name === 'argon2.verify') &&
      spans.filter((s) => s.scope === '@opentelemetry/instrumentation-ioredis').length >= 4)

    // Login: the request span is the root; argon2, Postgres and Redis below it, in its trace.
    const [loginSpan] = serverSpanOf(spans, 'ats-under-test', '/auth/Login')
    t.ok(loginSpan, 'a server span for Login')
    if (loginSpan === undefined) return
    t.equal(loginSpan.parentSpanId, '', 'Login without traceparent starts a trace')
    t.equal(loginSpan.attributes['http.response.status_code'], 200)
    const underLogin = (predicate: (s: ReceivedSpan) => boolean, what: string): void => {
      const found = spans.filter((s) => predicate(s) && ancestors(spans, s).includes(loginSpan))
      t.ok(found.length > 0, `${what} under Login's server span`)
      for (const span of found) t.equal(span.traceId, loginSpan.traceId, `${span.name}: Login's trace`)
    }
    underLogin((s) => s.name === 'argon2.verify', 'the argon2 verify')
    underLogin((s) => s.scope === '@opentelemetry/instrumentation-pg' && s.name.startsWith('pg.query:SELECT'), 'a Postgres query')
    underLogin((s) => s.scope === '@opentelemetry/instrumentation-ioredis', 'a Redis command')

    // The guard's request → (traceparent) → the service's Authenticate → Redis: one trace.
    for (const guardSpan of serverSpanOf(spans, 'orders-under-test', '/orders')) {
      const authenticate = spans.find((s) => s.service === 'ats-under-test' && s.kind === SERVER && s.traceId === guardSpan.traceId)
      t.ok(authenticate, `${String(guardSpan.attributes['http.request.method'])} /orders: the service's Authenticate span is in the guarded request's trace`)
      if (authenticate === undefined) continue
      t.equal(authenticate.attributes['http.route'], '/auth/Authenticate')
      t.ok(ancestors(spans, authenticate).includes(guardSpan), 'its parent chain reaches the guarded request')
      const redis = spans.find((s) => s.scope === '@opentelemetry/instrumentation-ioredis' && s.parentSpanId === authenticate.spanId)
      t.ok(redis, 'a Redis command, a child of Authenticate\'s server span, in the same trace')
      t.equal(redis?.traceId, guardSpan.traceId)
    }

    const [logoutSpan] = serverSpanOf(spans, 'ats-under-test', '/auth/Logout')
    t.ok(logoutSpan !== undefined && spans.some((s) => s.scope === '@opentelemetry/instrumentation-ioredis' && s.parentSpanId === logoutSpan.spanId), 'Logout: a Redis command, a child of its server span')

    // The access log names the trace: its line is waited for (the logger writes asynchronously,
    // so the line can still be in the pipe when the answer is in).
    const loginLine = (await service.outputMatching(/"route":"\/auth\/Login"/)).split('\n').find((line) => line.includes('"route":"/auth/Login"'))
    t.match(loginLine, `"traceId":"${loginSpan.traceId}"`, 'the access line carries the trace id')
  })

  t.test('an incoming traceparent continues the trace', async (t) => {
    const traceId = randomBytes(16).toString('hex')
    const parentId = randomBytes(8).toString('hex')
    const response = await fetch(`${service.baseUrl}/health/live`)
    await response.arrayBuffer()
    const answer = await fetch(`${service.baseUrl}/auth/Authenticate`, { headers: { traceparent: `00-${traceId}-${parentId}-01`, authorization: `Bearer ${'x'.repeat(43)}` } })
    await answer.arrayBuffer()
    const spans = await receiver.waitFor('the continued trace', (spans) => spans.some((s) => s.traceId === traceId && s.kind === SERVER))
    const span = spans.find((s) => s.traceId === traceId && s.kind === SERVER)
    t.equal(span?.parentSpanId, parentId, 'the server span is a child of the caller\'s span')
    t.notOk(spans.some((s) => s.attributes['http.route'] === '/health/live'), 'probes are not traced')
  })

  t.test('no password, token or secret in any exported span, whichever way it came', async (t) => {
    const before = receiver.spans().length
    let requests = 0
    const call = async (path: string, init: RequestInit = {}): Promise<Response> => {
      requests++
      const response = await fetch(service.baseUrl + path, init)
      await response.arrayBuffer()
      return response
    }
    const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

    // Login: form, JSON, query, legacy path, a wrong password, and a broken JSON body quoting it.
    requests++
    const byForm = addToken('token from a form Login', (await login(service, form({ username: USERNAME, password: PASSWORD }))).token)
    requests++
    const byJson = addToken('token from a JSON Login', (await login(service, json({ username: USERNAME, password: PASSWORD }))).token)
    requests++
    addToken('token from a query Login', (await login(service, {}, `/auth/Login?username=${USERNAME}&password=${encodeURIComponent(PASSWORD)}`)).token)
    requests++
    addToken('token from a path Login', (await login(service, {}, `/auth/Login/${USERNAME}/${encodeURIComponent(PASSWORD)}`)).token)
    const wrong = `${PASSWORD}-wrong`
    secrets.set('wrong password', wrong)
    t.not((await call('/auth/Login', form({ username: USERNAME, password: wrong }))).status, 200, 'a wrong password is refused')
    t.equal((await call('/auth/Login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"username":"${USERNAME}","password":"${PASSWORD}"` })).status, 400, 'broken JSON')
    // Federated: the directory checks the password (a bind as the user).
    requests++
    addToken('token from an LDAP Login', (await login(service, form({ username: LDAP_USER, password: LDAP_PASSWORD }))).token)

    // Authenticate: path, query, Bearer, cookie, form body.
    for (const [how, path, init] of [
      ['path', `/auth/Authenticate/${byForm}`, {}],
      ['query', `/auth/Authenticate?token=${byForm}`, {}],
      ['Bearer', '/auth/Authenticate', { headers: { authorization: `Bearer ${byForm}` } }],
      ['cookie', '/auth/Authenticate', { headers: { cookie: `AuthToken1=${byForm}` } }],
      ['form body', '/auth/Authenticate', form({ token: byForm })]
    ] as const) {
      t.equal((await call(path, init)).status, 200, `Authenticate by ${how}`)
    }
    // Forward auth and introspection.
    t.equal((await call('/auth/verify', { headers: { authorization: `Bearer ${byForm}` } })).status, 200, '/auth/verify by Bearer')
    t.equal((await call(`/auth/verify/app/page?token=${byForm}`)).status, 200, '/auth/verify by query')
    const basic = `Basic ${Buffer.from(`${INTROSPECTION_ID}:${INTROSPECTION_SECRET}`).toString('base64')}`
    t.equal((await call('/auth/introspect', { method: 'POST', headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' }, body: `token=${byForm}` })).status, 200, 'introspection')
    // Logout: form body, path.
    t.equal((await call('/auth/Logout', form({ token: byJson }))).status, 200, 'Logout by form')
    t.equal((await call(`/auth/Logout/${byForm}`, { method: 'POST' })).status, 200, 'Logout by path')

    const spans = await receiver.waitFor(`${requests} more server spans`, (spans) =>
      spans.slice(before).filter((s) => s.kind === SERVER && s.service === 'ats-under-test').length >= requests)
    t.ok(spans.some((s) => s.name === 'ldap.bind' && s.attributes['ldap.bind.as'] === 'user'), 'the LDAP bind was traced')
    t.ok(spans.some((s) => s.attributes['url.path'] === '/auth/Login/:username/:password'), 'the path Login is named by its route')
    t.ok(spans.some((s) => s.attributes['url.path'] === '/auth/Authenticate?token=[redacted]'), 'a query token is redacted')
    // Let the last spans (children end before their parents are exported) arrive.
    await new Promise((resolve) => setTimeout(resolve, 500))

    const everything = receiver.bodies().join('\n')
    t.ok(everything.length > 10_000, `${everything.length} bytes of OTLP JSON searched`)
    for (const [name, secret] of secrets) {
      for (const form of new Set([secret, encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1)])) {
        t.notOk(everything.includes(form), `no ${name} in any span`)
      }
    }
  })
})
