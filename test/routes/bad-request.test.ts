import { randomUUID } from 'node:crypto'
import t, { type Test } from 'tap'
import { buildApp } from '../../src/app/app.js'
import { migrate } from '../../src/core/migrate.js'
import { StatusError } from '../../src/errors/status.js'
import { createMemoryTokenStore } from '../../src/core/stores/memory/token-store.js'
import { testConfig } from '../support/config.js'
import { freshPglite } from '../support/pglite.js'
import { backendsOf, LogCapture } from '../operations/support.js'
import { assertStatus, badRequestBody, FORM, JSON_HEADERS, type InjectOptions } from './support.js'
import { fixtureAccounts } from '../support/app.js'
import { rawRequest } from '../support/raw-http.js'

/*
 * Every 400 says what is wrong: `{"status":400,"message":"Bad Request",
 * "detail":"<reason>"}`, the reason naming the parameter and the problem, never a value sent;
 * and the request's access-log line carries the same reason. One case per place a 400 comes
 * from: the strict query and form parser, schema validation, the routes' and the auth
 * service's own checks, the JSON body parser, the router (bad path encoding, long segments),
 * the Host check, and Node's HTTP parser (answered on the raw socket).
 */

interface LogRecord { reqId?: string, msg?: string, statusCode?: number, detail?: string, [key: string]: unknown }

const config = testConfig({ logLevel: 'info' })
const database = await freshPglite()
await migrate(database)
const backends = backendsOf(t, config, database, createMemoryTokenStore({ denyTtlMs: 60_000 }))
const capture = new LogCapture()
const app = await buildApp(config, { backends, logStream: capture })
t.teardown(async () => { await app.close() })
await fixtureAccounts(app).add('alice', 'pw', false)

function records (): LogRecord[] {
  return capture.since(0).map((line) => JSON.parse(line) as LogRecord)
}

/** The access line of the request sent with this id (lines are written when the response finishes). */
async function accessLine (id: string): Promise<LogRecord | undefined> {
  for (let i = 0; i < 100; i++) {
    const line = records().find((r) => r.reqId === id && r.msg === 'request completed')
    if (line !== undefined) return line
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  return undefined
}

/** Sends the request with an id of its own; the answer must be the 400 saying `detail`, and so must its access line. */
async function assertBadRequest (t: Test, options: InjectOptions, detail: string, what: string): Promise<void> {
  const id = randomUUID()
  const res = await app.inject({ ...options, headers: { ...options.headers, 'x-request-id': id } })
  assertStatus(t, res, 400, badRequestBody(detail), what)
  const line = await accessLine(id)
  t.match(line, { statusCode: 400, detail }, `${what}: the access line carries the detail`)
}

const json = (body: unknown): InjectOptions => ({ method: 'POST', url: '/auth/Login', headers: JSON_HEADERS, payload: JSON.stringify(body) })
const formBody = (payload: string, url = '/auth/Login'): InjectOptions => ({ method: 'POST', url, headers: FORM, payload })

t.test('the strict query and form parser', async (t) => {
  const cases: Array<[string, InjectOptions, string]> = [
    ['bad percent-encoding in a query value', { method: 'POST', url: '/auth/Login?username=alice&password=%ZZ' }, 'password has undecodable percent-encoding'],
    ['bad percent-encoding in a query name', { method: 'GET', url: '/auth/Authenticate?tok%E0n=x' }, 'a parameter name in the query string has undecodable percent-encoding'],
    ['bad percent-encoding in a parameter of no route', { method: 'GET', url: '/auth/Authenticate?mine=%C3%28' }, 'query string has undecodable percent-encoding'],
    ['__proto__ in the query', { method: 'GET', url: '/auth/Authenticate?__proto__=x' }, 'query string has a __proto__ parameter'],
    ['bad percent-encoding in a form value', formBody('username=alice&password=100%'), 'password has undecodable percent-encoding'],
    ['__proto__ in a form body', formBody('username=alice&password=pw&__proto__=1'), 'form body has a __proto__ parameter']
  ]
  for (const [what, options, detail] of cases) await assertBadRequest(t, options, detail, what)
})

t.test('schema validation: parameter given twice, not a string, too long, empty, NUL, pattern, format, body shape', async (t) => {
  const cases: Array<[string, InjectOptions, string]> = [
    ['a token given twice in the query', { method: 'GET', url: '/auth/Authenticate?token=a&token=b' }, 'token given more than once'],
    ['a password given twice in a form', formBody('username=alice&password=a&password=b'), 'password given more than once'],
    ['a username as a JSON array', json({ username: ['alice'], password: 'pw' }), 'username must be a string'],
    ['a token as a JSON object', { method: 'POST', url: '/auth/Logout', headers: JSON_HEADERS, payload: '{"token":{"a":1}}' }, 'token must be a string'],
    ['a username of 257 characters', json({ username: 'u'.repeat(257), password: 'pw' }), 'username is longer than 256 characters'],
    ['a password of 1025 characters', json({ username: 'alice', password: 'p'.repeat(1025) }), 'password is longer than 1024 bytes'],
    ['a token of 2049 characters', { method: 'GET', url: `/auth/Authenticate?token=${'t'.repeat(2049)}` }, 'token is longer than 2048 characters'],
    ['an empty password', formBody('username=alice&password='), 'password is empty'],
    ['NUL in a username', formBody('username=al%00ice&password=pw'), 'username contains a NUL character'],
    ['NUL in a legacy path segment', { method: 'POST', url: '/auth/Login/al%00ice/pw' }, 'username contains a NUL character'],
    ['a padding name that is no identifier', { method: 'GET', url: '/auth/Authenticate?jsonpFormat=alert(1)' }, 'padding function name in jsonpFormat is not a valid identifier'],
    ['format=xml', { method: 'GET', url: '/auth/Authenticate?format=xml' }, 'format must be json'],
    ['a JSON array as the body', { method: 'POST', url: '/auth/Authenticate', headers: JSON_HEADERS, payload: '["x"]' }, 'body must be an object of parameters']
  ]
  for (const [what, options, detail] of cases) await assertBadRequest(t, options, detail, what)
})

t.test('the routes\' own checks and the auth service\'s', async (t) => {
  const cases: Array<[string, InjectOptions, string]> = [
    ['Login without a username', formBody('password=pw'), 'username is required'],
    ['Login without a password', { method: 'POST', url: '/auth/Login?username=alice' }, 'password is required'],
    ['legacy path Login without a password', { method: 'POST', url: '/auth/Login/alice' }, 'password is required'],
    ['a reserved word as padding name', { method: 'GET', url: '/auth/Authenticate?callback=eval' }, 'padding function name in callback is a reserved word'],
    ['two different padding names', { method: 'GET', url: '/auth/Authenticate?callback=a&jsopFunction=b' }, 'two different padding function names given'],
    // Within the schema's 256 characters as sent; twice as many after NFC (U+0344 composes to two): the service's own check.
    ['a username over 256 characters after NFC', json({ username: '\u0344'.repeat(200), password: 'pw' }), 'username is longer than 256 characters'],
    ['a password of 1026 bytes in 513 characters', json({ username: 'alice', password: '\u00e9'.repeat(513) }), 'password is longer than 1024 bytes']
  ]
  for (const [what, options, detail] of cases) await assertBadRequest(t, options, detail, what)

  // The account administration (CLI, bootstrap) refuses with the same reasons.
  for (const [what, add, detail] of [
    ['an empty username', async () => await fixtureAccounts(app).add('', 'pw', false), 'username is empty'],
    ['no password for an account that is not federated', async () => await fixtureAccounts(app).add('bob', undefined, false), 'password is required'],
    ['a password over 1024 bytes', async () => await fixtureAccounts(app).add('bob', 'p'.repeat(1025), false), 'password is longer than 1024 bytes']
  ] as const) {
    const error: unknown = await add().then(() => undefined, (e: unknown) => e)
    t.ok(error instanceof StatusError && error.status === 400 && error.detail === detail, `accounts, ${what}: 400 saying "${detail}"`)
  }
})

t.test('the JSON body parser and the router', async (t) => {
  const cases: Array<[string, InjectOptions, string]> = [
    ['truncated JSON', { method: 'POST', url: '/auth/Login', headers: JSON_HEADERS, payload: '{"username":"alice",' }, 'body is not valid JSON, or holds a __proto__ key'],
    ['a JSON __proto__ key', { method: 'POST', url: '/auth/Login', headers: JSON_HEADERS, payload: '{"__proto__":{"a":1}}' }, 'body is not valid JSON, or holds a __proto__ key'],
    ['an empty JSON body', { method: 'POST', url: '/auth/Login', headers: JSON_HEADERS, payload: '' }, 'body is empty but Content-Type is application/json'],
    // QUERY (RFC 10008) must say what its body is; Fastify checks before any route answers 405.
    ['QUERY without a Content-Type', { method: 'QUERY' as InjectOptions['method'], url: '/auth/Login' }, 'Content-Type header is required'],
    ['bad percent-encoding in the path', { method: 'POST', url: '/auth/Login/alice/%E0%A4%A' }, 'path has undecodable percent-encoding'],
    ['a path segment over 2048 characters', { method: 'GET', url: `/auth/Authenticate/${'t'.repeat(2049)}` }, 'a path segment is longer than 2048 characters']
  ]
  for (const [what, options, detail] of cases) await assertBadRequest(t, options, detail, what)
})

t.test('other answers keep their bodies and their lines carry no detail', async (t) => {
  for (const [options, status, body] of [
    [{ method: 'GET', url: '/nowhere' }, 404, '{"status":404,"message":"Not Found"}'],
    [{ method: 'PUT', url: '/auth/Login' }, 405, '{"status":405,"message":"Method Not Allowed"}'],
    [{ method: 'GET', url: '/auth/Authenticate?token=nope' }, 403, '{"status":403,"message":"Unauthorized"}'],
    [formBody('username=alice&password=wrong'), 401, '{"status":701,"message":"Login Failed"}'],
    [{ method: 'POST', url: '/auth/Login', headers: { 'content-type': 'text/xml' }, payload: '<x/>' }, 415, '{"status":415,"message":"Unsupported Media Type"}']
  ] as Array<[InjectOptions, number, string]>) {
    const id = randomUUID()
    const res = await app.inject({ ...options, headers: { ...options.headers, 'x-request-id': id } })
    t.equal(res.statusCode, status)
    t.equal(res.body, body, `${status}: the body is exactly the status-message object`)
    const line = await accessLine(id)
    t.equal(line?.statusCode, status)
    t.notOk(line !== undefined && 'detail' in line, `${status}: no detail in the line`)
  }
  const padded = await app.inject({ method: 'GET', url: '/auth/Authenticate?callback=cb&token=nope' })
  t.equal(padded.body, 'function cb() {return {"status":403,"message":"Unauthorized"};}', 'a padded answer holds exactly status and message')
})

t.test('over a socket: no Host, and requests Node\'s HTTP parser refuses', async (t) => {
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0

  const id = randomUUID()
  const hostless = await rawRequest(port, `GET /auth/Authenticate HTTP/1.1\r\nX-Request-Id: ${id}\r\nConnection: close\r\n\r\n`)
  t.match(hostless, /^HTTP\/1\.1 400 /, 'no Host: 400')
  t.ok(hostless.endsWith('\r\n\r\n' + badRequestBody('Host header is required')), 'no Host: the body says so')
  t.match(await accessLine(id), { statusCode: 400, detail: 'Host header is required' }, 'no Host: the access line says so')

  const cases: Array<[string, string, string]> = [
    ['a garbage request line', 'GARBAGE\r\n\r\n', 'request method is not valid'],
    ['a header line without a colon', 'GET / HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n', 'a header line is not valid'],
    ['an unknown HTTP version', 'GET / HTTP/9.9\r\nHost: x\r\n\r\n', 'HTTP version is not valid'],
    ['a Content-Length that is no number', 'POST /auth/Logout HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', 'Content-Length is not valid'],
    ['Content-Length with Transfer-Encoding', 'POST /auth/Logout HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 'Transfer-Encoding is not valid, or given with Content-Length'],
    ['a control character in the target', 'GET /auth/\x01 HTTP/1.1\r\nHost: x\r\n\r\n', 'request target is not valid']
  ]
  for (const [what, request, detail] of cases) {
    const before = capture.mark()
    const answer = await rawRequest(port, request)
    t.match(answer, /^HTTP\/1\.1 400 Bad Request\r\n/, `${what}: 400`)
    t.ok(answer.endsWith('\r\n\r\n' + badRequestBody(detail)), `${what}: the body says "${detail}"`)
    const refused = capture.since(before).map((line) => JSON.parse(line) as LogRecord).filter((r) => r.msg === 'request refused')
    t.match(refused, [{ statusCode: 400, detail, remoteAddress: '127.0.0.1' }], `${what}: one line says who was refused and why`)
  }
})

t.test('a caller\'s logger gets the detail on the access line too', async (t) => {
  const lines = new LogCapture()
  const own = await buildApp(config, { backends, logger: { level: 'info', stream: lines } })
  t.teardown(async () => { await own.close() })
  const res = await own.inject({ method: 'GET', url: '/auth/Authenticate?format=xml' })
  t.equal(res.body, badRequestBody('format must be json'))
  const line = lines.since(0).map((text) => JSON.parse(text) as LogRecord).find((r) => r.msg === 'request completed')
  t.match(line, { statusCode: 400, detail: 'format must be json' })
})
