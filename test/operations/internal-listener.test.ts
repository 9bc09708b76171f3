import { connect } from 'node:net'
import t, { type Test } from 'tap'
import type { AddressInfo, Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { buildInternalApp } from '../../src/app/internal-listener.js'
import { generateToken, hashToken } from '@auth-token-service/protocol/token'
import { followRevocations } from '../../packages/guard/src/sse-feed.js'
import { buildTestApp } from '../support/app.js'
import { rawRequest } from '../support/raw-http.js'
import { hostOf } from '../../src/http/allowed-hosts.js'
import { networkInterfaces } from 'node:os'

/*
 * The revocation feed needs a credential, has a cap, and never buffers without limit for a
 * subscriber that does not read (it once had neither key nor cap: 2,000 streams from one client
 * in 4 s). Here on the internal listener as the service runs it, over real sockets.
 */

const KEY = 'k'.repeat(20) + '-revocations-key-0123456789'

async function internalListener (t: Test, maxSubscribers = 2): Promise<{ app: FastifyInstance, port: number }> {
  const { app, config } = await buildTestApp(t, 'embedded', { revocationsKey: KEY, revocationsMaxSubscribers: maxSubscribers })
  await app.ready()
  const internal = await buildInternalApp(app, config)
  await internal.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(async () => { await internal.close() })
  return { app, port: (internal.server.address() as AddressInfo).port }
}

/** Whether a new subscriber is let in now (it is closed at once either way). */
async function admitted (port: number): Promise<boolean> {
  const probe = subscribe(port, { authorization: `Bearer ${KEY}` })
  const answer = await probe.head
  probe.socket.destroy()
  return answer.startsWith('HTTP/1.1 200')
}

/** A raw subscriber: the request written by hand, the answer read as it comes. */
function subscribe (port: number, headers: Record<string, string>): { socket: Socket, received: () => string, head: Promise<string> } {
  const socket = connect(port, '127.0.0.1')
  let text = ''
  const head = new Promise<string>((resolve, reject) => {
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1')
      if (text.includes('\r\n\r\n')) resolve(text)
    })
    socket.once('error', reject)
    socket.once('close', () => { resolve(text) })
  })
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('')
  socket.write(`GET /auth/revocations HTTP/1.1\r\nHost: 127.0.0.1\r\n${lines}\r\n`)
  return { socket, received: () => text, head }
}

const until = async (what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> => {
  const started = Date.now()
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

t.test('a subscriber needs the key, compared whole', async (t) => {
  const { port } = await internalListener(t)
  for (const [what, headers] of [
    ['no key', {}],
    ['a wrong key', { authorization: `Bearer ${KEY.slice(0, -1)}x` }],
    ['a prefix of the key', { authorization: `Bearer ${KEY.slice(0, 10)}` }],
    ['the key as Basic', { authorization: `Basic ${KEY}` }]
  ] as Array<[string, Record<string, string>]>) {
    const { socket, head } = subscribe(port, headers)
    const answer = await head
    socket.destroy()
    t.match(answer, /^HTTP\/1\.1 401 /, what)
    t.match(answer, /www-authenticate: Bearer/i, `${what}: says how`)
  }
  const { socket, received } = subscribe(port, { authorization: `Bearer ${KEY}` })
  t.teardown(() => socket.destroy())
  await until('the ready event', () => received().includes('event: ready'))
  t.match(received(), /^HTTP\/1\.1 200 /)
})

t.test('subscribers are capped; a slot frees when one leaves', async (t) => {
  const { port } = await internalListener(t, 2)
  const open = [subscribe(port, { authorization: `Bearer ${KEY}` }), subscribe(port, { authorization: `Bearer ${KEY}` })]
  t.teardown(() => { for (const { socket } of open) socket.destroy() })
  for (const subscriber of open) await until('ready', () => subscriber.received().includes('event: ready'))
  const third = subscribe(port, { authorization: `Bearer ${KEY}` })
  const refused = await third.head
  third.socket.destroy()
  t.match(refused, /^HTTP\/1\.1 503 /, 'the third is refused')
  t.match(refused, /retry-after: 5/i)
  open[0]?.socket.destroy()
  let freed = false
  for (let attempt = 0; attempt < 100 && !freed; attempt++) freed = await admitted(port)
  t.ok(freed, 'a new subscriber gets the slot')
})

t.test('a subscriber that stops reading is cut, not buffered for; the others go on', async (t) => {
  const { app, port } = await internalListener(t, 2)
  const slow = subscribe(port, { authorization: `Bearer ${KEY}` })
  const fast = subscribe(port, { authorization: `Bearer ${KEY}` })
  t.teardown(() => { slow.socket.destroy(); fast.socket.destroy() })
  await until('ready', () => slow.received().includes('event: ready') && fast.received().includes('event: ready'))
  // The slow one reads nothing more: the kernel's buffers fill, then Node's.
  slow.socket.pause()
  const record = { accountId: '1', username: 'alice', federated: false, expiresAt: Date.now() + 60_000 }
  let sent = 0
  let cut = false
  for (let round = 0; round < 400 && !cut; round++) {
    await Promise.all(Array.from({ length: 2000 }, async () => { await app.backends.tokens.issue(hashToken(generateToken('1')), record, 60_000) }))
    sent += (await app.backends.tokens.terminateAccount('1')).length
    // The cap is 2: a third subscriber gets in only once the slow one is gone.
    cut = await admitted(port)
  }
  t.ok(cut, `the slow subscriber was cut after ${sent} revocations`)
  await until('the fast subscriber to have every revocation', () => (fast.received().match(/[A-Za-z0-9_-]{22}/g)?.length ?? 0) >= sent, 30_000)
  t.equal(fast.socket.destroyed, false, 'the subscriber that reads stays')
})

t.test('the guard\'s feed client sends the key, and follows revocations on the internal listener', async (t) => {
  const { app, port } = await internalListener(t, 4)
  const url = `http://127.0.0.1:${port}/auth/revocations`
  const follow = (key: string | undefined) => {
    const seen = { live: false, revoked: [] as string[], errors: [] as string[] }
    const handle = followRevocations({ url, key, minBackoffMs: 50, maxBackoffMs: 50, onError: (error) => { seen.errors.push(String(error)) } }, {
      live: () => { seen.live = true },
      interrupted: () => { seen.live = false },
      revoked: (hashes) => { seen.revoked.push(...hashes) }
    })
    t.teardown(async () => { await handle.close() })
    return seen
  }
  const withKey = follow(KEY)
  const without = follow(undefined)
  await until('the keyed feed live', () => withKey.live)
  await until('the keyless one refused', () => without.errors.length > 0)
  t.equal(without.live, false, 'no key: never live')
  const token = generateToken('7')
  await app.backends.tokens.issue(hashToken(token), { accountId: '7', username: 'ann', federated: false, expiresAt: Date.now() + 60_000 }, 60_000)
  await app.backends.tokens.terminate(hashToken(token))
  await until('the revocation', () => withKey.revoked.includes(hashToken(token)))
  t.pass('delivered')
})

/*
 * DNS rebinding: the internal listener answered any Host, so a page on a DNS-rebinding domain
 * (a name its owner points at 127.0.0.1) could read /metrics, /docs and the feed. Now only the
 * names it is reached by are answered, 421 otherwise; and no answer of it is for a cache.
 */

async function hostProbe (port: number, path: string, host: string | undefined, extra = ''): Promise<{ status: number, head: string, body: string }> {
  const hostLine = host === undefined ? '' : `Host: ${host}\r\n`
  const version = host === undefined ? 'HTTP/1.0' : 'HTTP/1.1'
  const text = await rawRequest(port, `GET ${path} ${version}\r\n${hostLine}${extra}Connection: close\r\n\r\n`)
  const split = text.indexOf('\r\n\r\n')
  return { status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1]), head: text.slice(0, split).toLowerCase(), body: text.slice(split + 4) }
}

t.test('the internal listener answers only the Host names it is reached by (DNS rebinding)', async (t) => {
  const { port } = await internalListener(t)
  const keyed = `Authorization: Bearer ${KEY}\r\n`
  for (const host of ['evil.example', `evil.example:${port}`, 'localhost.evil.example', '127.0.0.1.nip.io', `attacker.test:${port}`, '127.0.0.1:x', '']) {
    for (const path of ['/metrics', '/docs', '/openapi.json', '/auth/revocations', '/admin/users']) {
      const answer = await hostProbe(port, path, host, keyed)
      t.equal(answer.status, 421, `Host "${host}" ${path}: 421`)
      t.same(JSON.parse(answer.body), { status: 421, message: 'Misdirected Request' }, `Host "${host}" ${path}: the status object`)
      t.match(answer.head, /\r\ncache-control: no-store\r\n/, `Host "${host}" ${path}: no-store`)
    }
  }
  t.equal((await hostProbe(port, '/metrics', undefined)).status, 421, 'no Host at all (HTTP/1.0): 421')
  for (const host of [`127.0.0.1:${port}`, '127.0.0.1', `localhost:${port}`, 'LocalHost', `[::1]:${port}`]) {
    t.equal((await hostProbe(port, '/metrics', host)).status, 200, `Host ${host}: answered`)
  }
})

t.test('INTERNAL_HOSTNAMES adds names; a wildcard binding answers its interfaces\' addresses', async (t) => {
  const { app, config } = await buildTestApp(t, 'embedded', { internalHost: '0.0.0.0', internalHostnames: ['auth-internal'], revocationsKey: KEY })
  await app.ready()
  const internal = await buildInternalApp(app, config)
  await internal.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(async () => { await internal.close() })
  const { port } = internal.server.address() as AddressInfo
  t.equal((await hostProbe(port, '/metrics', `auth-internal:${port}`)).status, 200, 'a configured name')
  t.equal((await hostProbe(port, '/metrics', 'AUTH-INTERNAL')).status, 200, 'in any case')
  t.equal((await hostProbe(port, '/metrics', 'auth-internal.evil.example')).status, 421, 'not a name that merely starts with it')
  t.equal((await hostProbe(port, '/metrics', '0.0.0.0')).status, 421, 'the wildcard itself is no Host')
  const addresses = Object.values(networkInterfaces()).flatMap((entries) => entries ?? []).filter((entry) => entry.family === 'IPv4')
  t.ok(addresses.length > 0, 'this machine has an IPv4 interface')
  for (const { address } of addresses) t.equal((await hostProbe(port, '/metrics', `${address}:${port}`)).status, 200, `an interface's address, ${address}`)
  t.equal((await hostProbe(port, '/metrics', '203.0.113.9')).status, 421, 'an address of no interface here')
})

t.test('no AUTH_REVOCATIONS_KEY: the feed answers on a loopback-only internal listener, never on a wider one', async (t) => {
  for (const [internalHost, expected] of [['127.0.0.1', 200], ['0.0.0.0', 404], ['::', 404]] as const) {
    const { app, config } = await buildTestApp(t, 'embedded', { internalHost })
    await app.ready()
    const internal = await buildInternalApp(app, config)
    await internal.listen({ host: '127.0.0.1', port: 0 })
    t.teardown(async () => { await internal.close() })
    const { port } = internal.server.address() as AddressInfo
    const probe = subscribe(port, {})
    const head = await probe.head
    probe.socket.destroy()
    t.match(head, new RegExp(`^HTTP/1\\.1 ${expected} `), `INTERNAL_HOST=${internalHost}: ${expected}`)
  }
})

t.test('every answer of the internal listener carries Cache-Control: no-store', async (t) => {
  const { port } = await internalListener(t)
  for (const path of ['/metrics', '/openapi.json', '/docs', '/docs/', '/docs/static/swagger-ui.css', '/nowhere', '/admin/users', '/auth/revocations']) {
    const answer = await hostProbe(port, path, `127.0.0.1:${port}`)
    t.match(answer.head, /\r\ncache-control: no-store\r\n/, `${path} (${answer.status}): no-store`)
    t.notMatch(answer.head, /cache-control: (?!no-store\r\n)/, `${path}: no other Cache-Control`)
  }
})

t.test('hostOf: the host name of a Host header', async (t) => {
  const cases: Array<[string | undefined, string | undefined]> = [
    ['127.0.0.1:3001', '127.0.0.1'], ['LOCALHOST', 'localhost'], ['[::1]:3001', '::1'], ['[::1]', '::1'],
    ['a.example:80', 'a.example'], ['a.example:', undefined], ['a:b:c', undefined], ['[::1]x', undefined], ['', undefined], [undefined, undefined]
  ]
  for (const [header, host] of cases) t.equal(hostOf(header), host, String(header))
})

t.test('the operations /docs describes are answered on the internal listener as on the public port, so that Try it out works there', async (t) => {
  const { app, config, addUser } = await buildTestApp(t, 'embedded', { trustProxy: true })
  await addUser('reader', 'p&ss w=rd+%/é')
  await app.ready()
  const internal = await buildInternalApp(app, config)
  t.teardown(async () => { await internal.close() })
  const own = { host: '127.0.0.1:3001', origin: 'http://127.0.0.1:3001', 'sec-fetch-site': 'same-origin' }
  const form = { ...own, 'content-type': 'application/x-www-form-urlencoded' }
  const payload = 'username=reader&password=p%26ss%20w%3Drd%2B%25%2F%C3%A9'

  // A forwarded address is believed from no one here: the session records the caller's own.
  const login = await internal.inject({ method: 'POST', url: '/auth/Login', headers: { ...form, 'x-forwarded-for': '203.0.113.7' }, payload, remoteAddress: '127.0.0.1' })
  t.equal(login.statusCode, 200, 'Login from the page\'s own origin: 200')
  const body = login.json<{ status: number, token: string }>()
  t.equal(body.status, 0, 'status 0')
  const cookie = login.cookies.find((c) => c.name === 'AuthToken1')
  t.equal(cookie?.value, body.token, 'the AuthToken1 cookie is set, as the page says')
  t.equal(login.headers['cache-control'], 'no-store')

  const byCookie = await internal.inject({ method: 'GET', url: '/auth/Authenticate/', headers: { ...own, cookie: `AuthToken1=${body.token}` } })
  t.match(byCookie.json(), { status: 0, message: 'Success', username: 'reader' }, 'Authenticate by the cookie, trailing slash too')
  const onPublic = await app.inject({ method: 'GET', url: '/auth/Authenticate', headers: { authorization: `Bearer ${body.token}` } })
  t.equal(onPublic.json<{ status: number }>().status, 0, 'the same token on the public port')
  const sessions = await internal.inject({ method: 'GET', url: '/auth/sessions', headers: { ...own, authorization: `Bearer ${body.token}` } })
  t.match(sessions.json(), { status: 0, sessions: [{ ip: '127.0.0.1', current: true }] }, 'the session has the caller\'s address, not the forwarded one')

  for (const [what, headers] of [
    ['another Origin', { ...form, origin: 'http://evil.example' }],
    ['the public port\'s origin', { ...form, origin: 'http://127.0.0.1:3000' }],
    ['Sec-Fetch-Site: cross-site', { host: own.host, 'content-type': form['content-type'], 'sec-fetch-site': 'cross-site' }]
  ] as const) {
    const refused = await internal.inject({ method: 'POST', url: '/auth/Login', headers, payload })
    t.equal(refused.statusCode, 403, `${what}: 403`)
    t.same(refused.json(), { status: 403, message: 'Forbidden', detail: 'cross-site request' }, `${what}: the cross-site refusal`)
    t.notOk(refused.headers['set-cookie'], `${what}: no cookie`)
  }

  const wrongMethod = await internal.inject({ method: 'PUT', url: '/auth/Login', headers: own })
  t.equal(wrongMethod.statusCode, 405, 'a wrong method: the public port\'s 405')
  t.equal(wrongMethod.headers.allow, 'POST', 'with its Allow')
  const tooLarge = await internal.inject({ method: 'POST', url: '/auth/Login', headers: form, payload: 'x'.repeat(config.bodyLimitBytes + 1) })
  t.same([tooLarge.statusCode, tooLarge.json()], [413, { status: 413, message: 'Payload Too Large' }], 'a body over the limit: 413')
  const twoHosts = await internal.inject({ method: 'POST', url: '/auth/Login', headers: { ...form, host: ['127.0.0.1:3001', 'evil.example'] as unknown as string }, payload })
  t.not(twoHosts.statusCode, 200, 'two Host headers: not served')
  t.equal((await internal.inject({ method: 'GET', url: '/auth/signin', headers: own })).statusCode, 404, 'what /docs does not describe is not here')
})

t.test('with AUTH_PUBLIC_INTERNALS the listener\'s own routes stay its own', async (t) => {
  const { app, config } = await buildTestApp(t, 'embedded', { publicInternals: true, revocationsKey: KEY })
  await app.ready()
  const internal = await buildInternalApp(app, config)
  t.teardown(async () => { await internal.close() })
  const feed = await internal.inject({ method: 'GET', url: '/auth/revocations', headers: { host: '127.0.0.1:3001' } })
  t.equal(feed.statusCode, 401, 'the feed is the listener\'s (its key check)')
  const metrics = await internal.inject({ method: 'GET', url: '/metrics', headers: { host: '127.0.0.1:3001' } })
  t.equal(metrics.statusCode, 200, '/metrics answers')
  const live = await internal.inject({ method: 'GET', url: '/health/live', headers: { host: '127.0.0.1:3001' } })
  t.match(live.json(), { status: 0 }, 'and the public operations beside them')
})
