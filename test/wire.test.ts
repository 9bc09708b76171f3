import http from 'node:http'
import { connect } from 'node:net'
import t, { type Test } from 'tap'
import { buildTestApp } from './support/app.js'
import { BODIES, form, parseSetCookie, statusBody, TOKEN_SHAPE, type Cookie } from './routes/support.js'

/**
 * The service on a real listening socket: what only the wire shows (Set-Cookie as
 * sent, cookies sent back, keep-alive, and the answers Node writes itself for
 * requests Fastify never sees).
 */

const testApp = await buildTestApp(t, 'real')
const { app } = testApp
await testApp.addUser('alice', 'p&ss=w+rd %/#"\u00fc')
await app.listen({ port: 0, host: '127.0.0.1' })
const address = app.server.address()
if (address === null || typeof address === 'string') throw new Error('no TCP address')
const port = address.port
const base = `http://127.0.0.1:${port}`
const PASSWORD = 'p&ss=w+rd %/#"\u00fc'

let connections = 0
app.server.on('connection', () => { connections++ })

/** Writes raw bytes on a fresh connection; resolves with everything the server sent before closing. */
async function raw (request: string | Buffer): Promise<string> {
  return await new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    socket.setTimeout(5000, () => { socket.destroy(new Error('timed out waiting for the server')) })
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', (error) => {
      // The server may reset after answering; what arrived still counts.
      if (chunks.length > 0) resolve(Buffer.concat(chunks).toString('utf8'))
      else reject(error)
    })
    socket.on('end', () => { resolve(Buffer.concat(chunks).toString('utf8')) })
    socket.write(request)
  })
}

interface RawAnswer { status: number, headers: Map<string, string>, body: string }

function parseRaw (text: string): RawAnswer {
  const split = text.indexOf('\r\n\r\n')
  const head = split < 0 ? text : text.slice(0, split)
  const [statusLine = '', ...lines] = head.split('\r\n')
  const headers = new Map<string, string>()
  for (const line of lines) {
    const colon = line.indexOf(':')
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim())
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: split < 0 ? '' : text.slice(split + 4) }
}

function assertRawStatus (t: Test, answer: RawAnswer, status: number, message: string, what: string, detail?: string): void {
  t.equal(answer.status, status, `${what}: HTTP ${status}`)
  t.equal(answer.body, statusBody(status, message, detail), `${what}: status-message body`)
  t.equal(answer.headers.get('content-type'), 'application/json; charset=utf-8', `${what}: JSON`)
  t.equal(answer.headers.get('cache-control'), 'no-store', `${what}: Cache-Control: no-store`)
  t.equal(answer.headers.get('referrer-policy'), 'no-referrer', `${what}: Referrer-Policy: no-referrer`)
}

function tokenCookieOf (response: Response): Cookie | undefined {
  return response.headers.getSetCookie().map(parseSetCookie).find((c) => c.name === 'AuthToken1')
}

t.test('the cookie round trip: Login sets it, Authenticate and Logout take it back, Logout clears it', async (t) => {
  const login = await fetch(`${base}/auth/Login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: form({ username: 'alice', password: PASSWORD })
  })
  t.equal(login.status, 200, 'Login: 200')
  t.equal(login.headers.get('cache-control'), 'no-store')
  t.equal(login.headers.get('referrer-policy'), 'no-referrer')
  const body = await login.json() as { token: string, expiration_date: string }
  const setCookie = login.headers.getSetCookie()
  t.equal(setCookie.length, 1, 'one Set-Cookie header on the wire')
  t.match(setCookie[0], /^AuthToken1=2[A-Za-z0-9_-]{45}; /, 'AuthToken1=<token> first')
  const cookie = tokenCookieOf(login)
  t.equal(cookie?.value, body.token, 'the cookie carries the token')
  t.match(body.token, TOKEN_SHAPE)
  t.equal(cookie?.attributes.get('path'), '/', 'Path=/')
  t.ok(cookie?.attributes.has('httponly'), 'HttpOnly')
  t.equal(cookie?.attributes.get('samesite'), 'Lax', 'SameSite=Lax')
  t.equal(Date.parse(cookie?.attributes.get('expires') ?? ''), Date.parse(`${body.expiration_date}Z`), 'Expires is the expiration_date')
  t.ok(Number(cookie?.attributes.get('max-age')) >= 43198, 'Max-Age is 12 h')
  t.ok(cookie?.attributes.has('secure'), 'Secure by default, whatever NODE_ENV says')

  const sendBack = { cookie: `AuthToken1=${body.token}` }
  const authGet = await fetch(`${base}/auth/Authenticate`, { headers: sendBack })
  t.equal(authGet.status, 200, 'GET Authenticate with the cookie: 200')
  t.equal(((await authGet.json()) as { status: number }).status, 0)
  const authPost = await fetch(`${base}/auth/Authenticate`, { method: 'POST', headers: sendBack })
  t.equal(authPost.status, 200, 'POST Authenticate with the cookie and no body: 200')
  await authPost.arrayBuffer()

  const logout = await fetch(`${base}/auth/Logout`, { method: 'POST', headers: sendBack })
  t.equal(logout.status, 200, 'Logout with the cookie and no body: 200')
  t.equal(await logout.text(), BODIES.success)
  const cleared = tokenCookieOf(logout)
  t.equal(cleared?.value, '', 'the cookie is cleared')
  t.ok(cleared?.attributes.get('max-age') === '0' || Date.parse(cleared?.attributes.get('expires') ?? '') < Date.now(), 'Max-Age=0 or Expires in the past')
  t.equal(cleared?.attributes.get('path'), '/', 'with Path=/')

  const after = await fetch(`${base}/auth/Authenticate`, { headers: sendBack })
  t.equal(after.status, 403, 'the cookie no longer authenticates')
  t.equal(await after.text(), BODIES.unauthorized)
})

t.test('Login with the credentials in the query string and no body (curl -X POST)', async (t) => {
  const res = await fetch(`${base}/auth/Login?${form({ username: 'alice', password: PASSWORD })}`, { method: 'POST' })
  t.equal(res.status, 200, 'HTTP 200')
  t.equal(((await res.json()) as { status: number }).status, 0, 'status 0')
})

t.test('legacy path login with percent-encoded specials over the wire', async (t) => {
  const res = await fetch(`${base}/auth/Login/alice/${encodeURIComponent(PASSWORD)}`, { method: 'POST' })
  t.equal(res.status, 200)
  const { token } = await res.json() as { token: string }
  const check = await fetch(`${base}/auth/Authenticate/${token}`)
  t.equal(check.status, 200, 'the token authenticates')
  await check.arrayBuffer()
})

t.test('keep-alive: several requests on one connection', async (t) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => { agent.destroy() })
  const request = async (method: string, path: string, body?: string): Promise<{ status: number, body: string, reused: boolean }> =>
    await new Promise((resolve, reject) => {
      const req = http.request(`${base}${path}`, {
        method,
        agent,
        headers: body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) }
      }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => { resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), reused: req.reusedSocket }) })
      })
      req.on('error', reject)
      req.end(body)
    })
  const before = connections
  const login = await request('POST', '/auth/Login', form({ username: 'alice', password: PASSWORD }))
  t.equal(login.status, 200, 'Login')
  const token = (JSON.parse(login.body) as { token: string }).token
  const answers = [
    await request('GET', `/auth/Authenticate/${token}`),
    await request('GET', `/auth/Authenticate?token=${token}&callback=cb`),
    await request('GET', '/no/such/route'),
    await request('PUT', '/auth/Login'),
    await request('POST', `/auth/Logout/${token}`),
    await request('GET', `/auth/Authenticate/${token}`)
  ]
  t.same(answers.map((a) => a.status), [200, 200, 404, 405, 200, 403], 'each answered in turn')
  t.equal(answers[1]?.body, 'function cb() {return {"status":0,"message":"Success"};}')
  t.ok(answers.every((a) => a.reused), 'every later request reused the socket')
  t.equal(connections - before, 1, 'one TCP connection for all seven requests')
})

t.test('a garbage request line: 400 with a status-message body saying what is wrong', async (t) => {
  const answer = parseRaw(await raw('GARBAGE\r\n\r\n'))
  assertRawStatus(t, answer, 400, 'Bad Request', 'GARBAGE', 'request method is not valid')
  const bad = parseRaw(await raw('GET /auth/Authenticate HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n'))
  assertRawStatus(t, bad, 400, 'Bad Request', 'a header line without a colon', 'a header line is not valid')
  const smuggle = parseRaw(await raw('POST /auth/Logout HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'))
  assertRawStatus(t, smuggle, 400, 'Bad Request', 'Content-Length with Transfer-Encoding', 'Transfer-Encoding is not valid, or given with Content-Length')
})

t.test('a header over 16 KiB: 431 with a status-message body', async (t) => {
  const answer = parseRaw(await raw(`GET /auth/Authenticate HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`))
  assertRawStatus(t, answer, 431, 'Request Header Fields Too Large', 'an over-long header')
  const cookie = parseRaw(await raw(`GET /auth/Authenticate HTTP/1.1\r\nHost: x\r\nCookie: AuthToken1=${'a'.repeat(20 * 1024)}\r\n\r\n`))
  t.equal(cookie.status, 431, 'an over-long cookie: 431')
  t.equal(cookie.body, statusBody(431, 'Request Header Fields Too Large'))
})

t.test('path segments: up to 2 KiB are routed; longer ones are a status-message error, not a crash', async (t) => {
  const routed = await fetch(`${base}/auth/Authenticate/${'a'.repeat(2000)}`)
  t.equal(routed.status, 403, 'a 2000-character token segment is routed and refused as unknown')
  t.equal(await routed.text(), BODIES.unauthorized)
  const legacy = await fetch(`${base}/auth/Login/alice/${'x'.repeat(2000)}`, { method: 'POST' })
  t.equal(legacy.status, 400, 'a 2000-byte legacy password is routed and refused as too long')
  t.equal(await legacy.text(), statusBody(400, 'Bad Request', 'password is longer than 1024 bytes'))

  for (const [what, path, method] of [
    ['Authenticate', `/auth/Authenticate/${'a'.repeat(5000)}`, 'GET'],
    ['Logout', `/auth/Logout/${'a'.repeat(5000)}`, 'POST'],
    ['legacy Login', `/auth/Login/alice/${'x'.repeat(5000)}`, 'POST']
  ] as const) {
    const res = await fetch(`${base}${path}`, { method })
    const text = await res.text()
    t.ok(res.status >= 400 && res.status < 500, `${what}: a client error (HTTP ${res.status})`)
    const body = JSON.parse(text) as Record<string, unknown>
    t.same(body, { status: 400, message: 'Bad Request', detail: 'a path segment is longer than 2048 characters' }, `${what}: a status-message body saying why`)
    t.equal(body.status, res.status, `${what}: body status matches HTTP status`)
    t.equal(res.headers.get('cache-control'), 'no-store', `${what}: Cache-Control: no-store`)
    t.equal(res.headers.get('referrer-policy'), 'no-referrer', `${what}: Referrer-Policy: no-referrer`)
  }
  const alive = await fetch(`${base}/auth/Authenticate`)
  t.equal(alive.status, 403, 'the server still answers')
  await alive.arrayBuffer()
})

t.test('an error answer on the wire: 404 and 405 as status-messages', async (t) => {
  const missing = parseRaw(await raw('GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'))
  assertRawStatus(t, missing, 404, 'Not Found', 'unknown route')
  const method = parseRaw(await raw('DELETE /auth/Login HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'))
  assertRawStatus(t, method, 405, 'Method Not Allowed', 'DELETE /auth/Login')
  t.equal(method.headers.get('allow'), 'POST', 'Allow: POST')
  const big = parseRaw(await raw(`POST /auth/Login HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${20 * 1024}\r\n\r\n${'x'.repeat(20 * 1024)}`))
  assertRawStatus(t, big, 413, 'Payload Too Large', 'a 20 KiB body')
})
