import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { generateToken } from '@auth-token-service/protocol/token'
import { createAuthClient } from '@auth-token-service/guard/client'
import { startTokenService, USER } from '../guard/support.js'

const TOKEN_SHAPE = /^2[A-Za-z0-9_-]{45}$/

interface Seen { method: string | undefined, url: string | undefined, headers: IncomingMessage['headers'], body: string }

/** A stand-in server that records what it was sent and answers as told. */
async function fakeServer (t: Test, answer: (response: ServerResponse, seen: Seen) => void): Promise<{ url: string, seen: Seen[] }> {
  const seen: Seen[] = []
  const server = createServer((request, response) => {
    let body = ''
    request.setEncoding('utf8')
    request.on('data', (chunk: string) => { body += chunk })
    request.on('end', () => {
      const entry = { method: request.method, url: request.url, headers: request.headers, body }
      seen.push(entry)
      answer(response, entry)
    })
  })
  await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
  t.teardown(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => { server.close(resolve) })
  })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen }
}

t.test('against the real service', async (t) => {
  const service = await startTokenService(t, { maxFailedLogins: 2 })
  const client = createAuthClient({ baseUrl: service.baseUrl })

  t.test('login, authenticate, logout: typed successes, then a 403 value', async (t) => {
    const login = await client.login(USER.username, USER.password)
    if (!login.ok) throw new Error(`login failed: ${JSON.stringify(login.error)}`)
    t.match(login.token, TOKEN_SHAPE)
    t.type(login.expiresAt, Date)
    t.equal(login.expiresAt.getTime() % 1000, 0, 'the whole second expiration_date names')
    t.ok(login.expiresAt.getTime() > Date.now() + 11 * 3600_000, 'about 12 h from now')
    t.match(login.setCookie, new RegExp(`^AuthToken1=${login.token}; .*HttpOnly`))

    const account = (await service.app.accounts.list())[0]
    t.same(await client.authenticate(login.token), {
      ok: true, token: login.token, expiresAt: login.expiresAt, accountId: account?.id, username: USER.username, federated: false, groups: []
    }, 'an account in no group: groups []')
    t.same(await client.logout(login.token), { ok: true, setCookie: undefined }, 'no cookie was sent, none is cleared')
    t.same(await client.authenticate(login.token), { ok: false, error: { kind: 'status', status: 403, message: 'Unauthorized', httpStatus: 403 } })
    t.same(await client.logout(login.token), { ok: false, error: { kind: 'status', status: 403, message: 'Unauthorized', httpStatus: 403 } })
  })

  t.test('the cookie is forwarded when asked', async (t) => {
    const first = await client.login(USER.username, USER.password)
    if (!first.ok) throw new Error('login failed')
    const refreshed = await client.login(USER.username, USER.password, { cookie: first.token })
    t.match(refreshed, { ok: true, token: first.token }, 'a Login presenting the cookie refreshes that token')
    t.match(await client.login(USER.username, USER.password, { token: first.token }), { ok: true, token: first.token }, 'so does the token field')
    t.match(await client.authenticate(first.token, { asCookie: true }), { ok: true, token: first.token })
    const logout = await client.logout(first.token, { asCookie: true })
    if (!logout.ok) throw new Error('logout failed')
    t.match(logout.setCookie, /^AuthToken1=; .*Expires=Thu, 01 Jan 1970/, 'the line that clears the browser\'s cookie')
    t.match(await client.authenticate(first.token, { asCookie: true }), { ok: false, error: { status: 403 } })
  })

  t.test('400, 701 and 429 are values with the body\'s status', async (t) => {
    t.same(await client.login('', 'x'), { ok: false, error: { kind: 'status', status: 400, message: 'Bad Request', httpStatus: 400, detail: 'username is empty' } }, 'a 400 carries its detail')
    t.same(await client.login('bob', 'wrong'), { ok: false, error: { kind: 'status', status: 701, message: 'Login Failed', httpStatus: 401 } })
    t.same(await client.login(USER.username, 'wrong'), { ok: false, error: { kind: 'status', status: 701, message: 'Login Failed', httpStatus: 401 } })
    await client.login(USER.username, 'wrong again')
    const locked = await client.login(USER.username, USER.password)
    t.match(locked, { ok: false, error: { kind: 'status', status: 429, message: 'Too Many Requests', httpStatus: 429 } })
    if (!locked.ok && locked.error.kind === 'status') t.ok((locked.error.retryAfterSeconds ?? 0) >= 1, `Retry-After ${locked.error.retryAfterSeconds} s`)
  })

  t.test('503 when the service\'s backend is gone', async (t) => {
    const login = await client.login('carol', 'x')
    t.match(login, { ok: false })
    service.redisStore?.redis.disconnect()
    const token = generateToken('1')
    t.same(await client.authenticate(token), { ok: false, error: { kind: 'status', status: 503, message: 'Service Unavailable', httpStatus: 503 } })
    t.same(await client.login(USER.username, USER.password), { ok: false, error: { kind: 'status', status: 503, message: 'Service Unavailable', httpStatus: 503 } })
  })
})

t.test('a closed port is a network error value', async (t) => {
  const probe = createServer()
  await new Promise<void>((resolve) => { probe.listen(0, '127.0.0.1', resolve) })
  const { port } = probe.address() as AddressInfo
  await new Promise((resolve) => { probe.close(resolve) })
  const client = createAuthClient({ baseUrl: `http://127.0.0.1:${port}` })
  for (const result of [await client.login('a', 'b'), await client.authenticate('t'), await client.logout('t')]) {
    t.match(result, { ok: false, error: { kind: 'network', timedOut: false } })
    if (!result.ok && result.error.kind === 'network') t.type(result.error.cause, Error)
  }
})

t.test('no answer within timeoutMs: a network error that says it timed out', async (t) => {
  const { url } = await fakeServer(t, () => {})
  const client = createAuthClient({ baseUrl: url, timeoutMs: 200 })
  const started = Date.now()
  t.match(await client.authenticate('t'), { ok: false, error: { kind: 'network', timedOut: true } })
  t.ok(Date.now() - started < 5000, 'timed out, not hung (a bound a busy machine does not reach)')
})

t.test('a body that stalls halfway: the same timeout, a network error, no hang', async (t) => {
  const { url } = await fakeServer(t, (response) => {
    response.writeHead(200, { 'content-type': 'application/json' })
    response.write('{"status":0,')
  })
  const client = createAuthClient({ baseUrl: url, timeoutMs: 200 })
  for (let i = 0; i < 5; i++) {
    const started = Date.now()
    t.match(await client.authenticate('t'), { ok: false, error: { kind: 'network', timedOut: true } })
    t.ok(Date.now() - started < 5000, 'timed out, not hung')
  }
})

t.test('answers off the contract', async (t) => {
  const answers: Array<[number, string, Record<string, string>]> = [
    [502, '<html>Bad Gateway</html>', { 'content-type': 'text/html' }],
    [200, 'not json', { 'content-type': 'text/plain' }],
    [200, JSON.stringify({ status: 0, message: 'Success' }), { 'content-type': 'application/json' }],
    [503, JSON.stringify({ status: 503, message: 'Service Unavailable' }), { 'retry-after': '7' }]
  ]
  let next = 0
  const { url } = await fakeServer(t, (response) => {
    const [status, body, headers] = answers[next++] ?? [500, '', {}]
    response.writeHead(status, headers).end(body)
  })
  const client = createAuthClient({ baseUrl: url })
  t.same(await client.authenticate('t'), { ok: false, error: { kind: 'status', status: 502, message: 'HTTP 502', httpStatus: 502 } }, 'a proxy\'s page: its HTTP status')
  t.same(await client.authenticate('t'), { ok: false, error: { kind: 'protocol', message: 'unexpected success body', httpStatus: 200 } })
  t.match(await client.login('a', 'b'), { ok: false, error: { kind: 'protocol', httpStatus: 200 } }, 'a success without a token')
  t.same(await client.logout('t'), { ok: false, error: { kind: 'status', status: 503, message: 'Service Unavailable', httpStatus: 503, retryAfterSeconds: 7 } })
})

t.test('Authenticate\'s groups: as answered, [] when absent (a service of before groups), a protocol error when not a list of names', async (t) => {
  const success = { status: 0, message: 'Success', expiration_date: '2031-01-02T03:04:05', account_id: '7', username: 'ann', federated: false }
  const bodies: unknown[] = [
    { ...success, groups: ['dev', 'ops'] },
    { ...success, groups: [] },
    success,
    { ...success, kind: 'api_key', key_id: 'k1', groups: ['ops'] },
    { ...success, groups: 'ops' },
    { ...success, groups: ['ops', 7] }
  ]
  let next = 0
  const { url } = await fakeServer(t, (response) => {
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(bodies[next++]))
  })
  const client = createAuthClient({ baseUrl: url })
  const expiresAt = new Date('2031-01-02T03:04:05Z')
  const grouped = await client.authenticate('t')
  t.same(grouped, { ok: true, token: 't', expiresAt, accountId: '7', username: 'ann', federated: false, groups: ['dev', 'ops'] })
  if (grouped.ok) t.ok(Object.isFrozen(grouped.groups), 'frozen: a guard\'s cache shares it between requests')
  t.same(await client.authenticate('t'), { ok: true, token: 't', expiresAt, accountId: '7', username: 'ann', federated: false, groups: [] })
  t.same(await client.authenticate('t'), { ok: true, token: 't', expiresAt, accountId: '7', username: 'ann', federated: false, groups: [] }, 'no groups field: none')
  t.same(await client.authenticate('t'), { ok: true, token: 't', expiresAt, accountId: '7', username: 'ann', federated: false, keyId: 'k1', groups: ['ops'] }, 'an API key carries its account\'s groups too')
  const protocol = { ok: false, error: { kind: 'protocol', message: 'Authenticate success whose groups are not a list of names', httpStatus: 200 } }
  t.same(await client.authenticate('t'), protocol, 'a string')
  t.same(await client.authenticate('t'), protocol, 'a list with a number')
})

t.test('the password goes only in a form body, to the path under baseUrl, and never follows a redirect', async (t) => {
  const password = 'p&ss=w+rd %/#"\' ü'
  const target = await fakeServer(t, (response) => { response.writeHead(200).end('{}') })
  const { url, seen } = await fakeServer(t, (response) => {
    response.writeHead(307, { location: `${target.url}/steal` }).end()
  })
  const client = createAuthClient({ baseUrl: `${url}/prefix?ignored=1` })
  const result = await client.login('ann', password, { token: 'tok' })
  t.match(result, { ok: false, error: { kind: 'network' } }, 'a redirect is an error, not followed')
  t.equal(target.seen.length, 0, 'nothing reached the redirect\'s target')
  const [request] = seen
  t.equal(request?.method, 'POST')
  t.equal(request?.url, '/prefix/auth/Login', 'no query string: nothing secret in a URL')
  t.equal(request?.headers['content-type'], 'application/x-www-form-urlencoded')
  t.same(Object.fromEntries(new URLSearchParams(request?.body)), { username: 'ann', password, token: 'tok' })
  t.notOk(request?.headers.cookie)
})

t.test('the token as a cookie is percent-encoded: it cannot break out of the header', async (t) => {
  const { url, seen } = await fakeServer(t, (response) => { response.writeHead(403).end(JSON.stringify({ status: 403, message: 'Unauthorized' })) })
  const client = createAuthClient({ baseUrl: url })
  t.match(await client.authenticate('a;b=c\r\nX-Evil: 1', { asCookie: true }), { ok: false, error: { status: 403 } })
  t.equal(seen[0]?.headers.cookie, 'AuthToken1=a%3Bb%3Dc%0D%0AX-Evil%3A%201')
  t.equal(seen[0]?.body, '', 'and not in the body too')
})

t.test('the client never writes to the console', async (t) => {
  const calls: string[] = []
  const original = { log: console.log, info: console.info, warn: console.warn, error: console.error, debug: console.debug }
  for (const name of Object.keys(original) as Array<keyof typeof original>) console[name] = () => { calls.push(name) }
  t.teardown(() => { Object.assign(console, original) })
  const client = createAuthClient({ baseUrl: 'http://127.0.0.1:1', timeoutMs: 200 })
  await client.login('ann', 'secret')
  await client.authenticate('t')
  await client.logout('t')
  t.same(calls, [])
})
