import { generateToken } from '@auth-token-service/protocol/token'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { buildGuardedApp, startTokenService } from './support.js'

const UNAVAILABLE = JSON.stringify({ status: 503, message: 'Service Unavailable' })
/** Well-formed, so that it is looked up: a malformed one is refused without asking anyone. */
const token = generateToken('1')

async function listen (t: Test, server: Server): Promise<string> {
  await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
  t.teardown(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => { server.close(resolve) })
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** A port nobody listens on: one we just held and let go. */
async function closedPort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => { server.close(resolve) })
  return port
}

/**
 * A 503 with the status-message body. Returns how long it took. No upper bound is asserted (a
 * busy machine can reach any): a guard that hung would fail the test by tap's timeout, and a
 * configured timeout is shown honoured by a lower bound above the default.
 */
async function assertUnavailable (t: Test, guarded: Awaited<ReturnType<typeof buildGuardedApp>>, what: string): Promise<number> {
  const started = performance.now()
  const res = await guarded.app.inject({ method: 'GET', url: '/whoami', query: { token } })
  const took = performance.now() - started
  t.equal(res.statusCode, 503, `${what}: 503`)
  t.equal(res.body, UNAVAILABLE, `${what}: the status-message body`)
  t.equal(res.headers['cache-control'], 'no-store', `${what}: no-store`)
  return took
}

t.test('direct mode, Redis unreachable: 503, never a pass, with or without a cache', async (t) => {
  for (const cache of [undefined, { maxEntries: 10, ttlMs: 60_000 }]) {
    const guarded = await buildGuardedApp(t, { redisUrl: 'redis://127.0.0.1:1', keyPrefix: 'x:', timeoutMs: 300, cache })
    await assertUnavailable(t, guarded, cache === undefined ? 'no cache' : 'with a cache')
    t.equal((await guarded.app.inject({ method: 'GET', url: '/whoami' })).statusCode, 401, 'no token is still a 401: it needs no store')
    t.equal((await guarded.app.inject({ method: 'GET', url: '/whoami', query: { token: 'short' } })).statusCode, 403, 'a malformed token is still a 403')
  }
})

t.test('HTTP mode, Authenticate unreachable (closed port): 503', async (t) => {
  const port = await closedPort()
  const guarded = await buildGuardedApp(t, { authenticateUrl: `http://127.0.0.1:${port}/auth/Authenticate`, cache: { maxEntries: 10, ttlMs: 60_000 } })
  await assertUnavailable(t, guarded, 'closed port')
})

t.test('HTTP mode, Authenticate hangs: 503 after timeoutMs, no retries', async (t) => {
  let requests = 0
  const url = await listen(t, createServer(() => { requests++ }))
  // Longer than the default (2000 ms), so that the wait it takes shows this setting was used.
  const guarded = await buildGuardedApp(t, { authenticateUrl: `${url}/auth/Authenticate`, timeoutMs: 2500 })
  const took = await assertUnavailable(t, guarded, 'hanging service')
  t.ok(took >= 2450, `answered after timeoutMs (2500), not the default 2000: ${Math.round(took)} ms`)
  t.equal(requests, 1, 'one request, not a retry storm')
})

t.test('HTTP mode, Authenticate stalls halfway through its body: 503 after timeoutMs', async (t) => {
  const url = await listen(t, createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' })
    response.write('{"status":0,')
  }))
  const guarded = await buildGuardedApp(t, { authenticateUrl: `${url}/auth/Authenticate`, timeoutMs: 300 })
  for (let i = 0; i < 3; i++) await assertUnavailable(t, guarded, `stalled body ${i + 1}`)
})

t.test('HTTP mode, anything but success or 403 from Authenticate is a 503', async (t) => {
  const answers: Array<[number, string]> = [
    [503, UNAVAILABLE],
    [500, '<html>oops</html>'],
    [404, JSON.stringify({ status: 404, message: 'Not Found' })],
    [200, JSON.stringify({ status: 0, message: 'Success' })]
  ]
  let next = 0
  const url = await listen(t, createServer((_request, response) => {
    const [status, body] = answers[next++] ?? [500, '']
    response.writeHead(status, { 'content-type': 'application/json' }).end(body)
  }))
  const guarded = await buildGuardedApp(t, { authenticateUrl: `${url}/auth/Authenticate` })
  await assertUnavailable(t, guarded, 'a 503 from the service')
  await assertUnavailable(t, guarded, 'a proxy\'s HTML 500')
  await assertUnavailable(t, guarded, 'a wrong URL (404)')
  await assertUnavailable(t, guarded, 'a success without the account (an older service)')
})

t.test('HTTP mode against a real service whose Redis is gone: its 503 is passed on', async (t) => {
  const service = await startTokenService(t)
  const token = await service.login()
  const guarded = await buildGuardedApp(t, { authenticateUrl: service.authenticateUrl })
  t.equal(await guarded.status(token), 200, 'passes while the service can answer')
  // The service's own Redis connection goes away (as in an outage): it answers 503.
  service.redisStore?.redis.disconnect()
  t.equal(await guarded.status(token), 503)
})

t.test('the token never appears in a log line (with the request URL redacted as the guard offers)', async (t) => {
  const lines: string[] = []
  const { default: Fastify } = await import('fastify')
  const { authTokenGuard, redactUrl } = await import('@auth-token-service/guard')
  const app = Fastify({
    logger: {
      level: 'trace',
      stream: { write: (line: string) => { lines.push(line) } },
      serializers: { req: (request) => ({ method: request.method, url: redactUrl(request.url) }) }
    }
  })
  await app.register(authTokenGuard, { redisUrl: 'redis://127.0.0.1:1', timeoutMs: 200 })
  app.get('/x', async () => 'ok')
  t.teardown(async () => { await app.close() })
  t.equal((await app.inject({ method: 'GET', url: '/x', query: { token } })).statusCode, 503)
  t.equal((await app.inject({ method: 'GET', url: '/x', headers: { authorization: `Bearer ${token}` } })).statusCode, 503)
  t.ok(lines.some((line) => line.includes('503')), 'the outage is logged')
  t.notOk(lines.some((line) => line.includes(token)), 'never with the token')
})
