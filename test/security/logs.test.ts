import { generateToken } from '@auth-token-service/protocol/token'
import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { Writable } from 'node:stream'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { buildApp } from '../../src/app/app.js'
import { assembleBackends } from '../../src/app/backends.js'
import type { Config } from '../../src/config/config.js'
import { migrate } from '../../src/core/migrate.js'
import type { Database } from '../../src/db/database.js'
import { createRedisTokenStore } from '../../src/core/stores/redis/token-store.js'
import type { ServiceTokenStore, Backends } from '../../src/app/backends.js'
import { bootstrapAccount } from '../../src/app/server.js'
import { testConfig } from '../support/config.js'
import { freshPostgresDatabase, patientPostgres } from '../../support/postgres.js'
import { freshRedisPrefix, requireRedis } from '../../support/redis.js'
import { rawRequest } from '../support/raw-http.js'
import { fixtureAccounts } from '../support/app.js'

/*
 * Logs never hold a password or a token, whichever way it was sent (contract,
 * configuration; security.md, Logs). The app is built with the production logger
 * (the config's level, here trace, and the redacting serializers) writing into a
 * capture; every pathway is driven with a known, unique secret, and then every
 * captured line is searched for every secret, raw and in its encoded forms.
 * User text with CR/LF and control characters must not forge a log line.
 */

/** Every write the logger made; pino writes one whole line per record. */
class LogCapture extends Writable {
  readonly writes: string[] = []
  override _write (chunk: Buffer | string, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.writes.push(typeof chunk === 'string' ? chunk : chunk.toString('utf8'))
    done()
  }
}

interface LogRecord {
  level: number
  msg?: string
  reqId?: string
  req?: { method?: string, url?: string, remoteAddress?: string }
  [key: string]: unknown
}

const NONCE = randomBytes(6).toString('hex')

/**
 * A secret that every encoding changes somewhere (`&`, `=`, `+`, space, `%`, `/`,
 * `#`, quotes, non-ASCII) around a unique alphanumeric core that no encoding changes,
 * so finding the core anywhere means the secret leaked in some form.
 */
interface Secret { core: string, value: string }
const secrets: Secret[] = []
function password (label: string): string {
  const core = `pw${label}${NONCE}`
  const value = `P&s=s+ w/%#"'é✓-${core}-end`
  secrets.push({ core, value })
  return value
}
/** Tokens are base64url: every encoding leaves them as they are. */
function rememberToken (token: string): string {
  secrets.push({ core: token, value: token })
  return token
}
/** Well-formed and never issued, so that it is looked up (a malformed one is refused without a lookup). */
function unknownToken (): string {
  return rememberToken(generateToken(String(Math.random())))
}

/** The forms a secret could take in a log line: raw, percent-encoded (either case), form-encoded, JSON-escaped, and its core. */
function leakForms (secret: Secret): string[] {
  const forms = new Set([
    secret.core,
    secret.value,
    encodeURIComponent(secret.value),
    encodeURIComponent(secret.value).toLowerCase(),
    new URLSearchParams({ x: secret.value }).toString().slice(2),
    JSON.stringify(secret.value).slice(1, -1)
  ])
  if (secret.core.length === 43 || secret.core.length === 46) {
    // A token cut short is still most of a token.
    forms.add(secret.core.slice(0, 16))
    forms.add(secret.core.slice(-16))
  }
  return [...forms]
}

/** A line as it can be shown in the test's own output (which raw NEL or U+2028 would break). */
function printable (line: string): string {
  // eslint-disable-next-line no-control-regex -- the control characters are what it shows
  return line.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `<U+${c.charCodeAt(0).toString(16).padStart(4, '0')}>`)
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
const JSON_TYPE = { 'content-type': 'application/json' }
const CLIENT = { remoteAddress: '203.0.113.7', headers: { 'user-agent': 'logs-test/1.0' } }

function form (params: Record<string, string>): string {
  return new URLSearchParams(params).toString()
}

/** Backends over the given database and token store (the app is handed them, so it never closes them); closed at the end. */
async function backendsFor (t: Test, config: Config, database: Database, tokens: ServiceTokenStore): Promise<Backends> {
  // Both apps share the database: whichever closes second finds it closed, which close() tolerates.
  const backends = assembleBackends(config, { database, tokens })
  t.teardown(async () => { await backends.close() })
  return backends
}

const capture = new LogCapture()
const redisKeyPrefix = await freshRedisPrefix(t)
const config = testConfig({ logLevel: 'trace', redisKeyPrefix })
const database = patientPostgres(await freshPostgresDatabase(t))
await migrate(database)
const redisStore = createRedisTokenStore({ url: await requireRedis(), keyPrefix: redisKeyPrefix, denyTtlMs: 60_000 })
await redisStore.ready()

const app = await buildApp(config, { backends: await backendsFor(t, config, database, redisStore), logStream: capture })
t.teardown(async () => { await app.close() })

// Token operations against a Redis that is not there: 503s, whose error line names the cause.
const deadRedis = createRedisTokenStore({ url: 'redis://127.0.0.1:1', denyTtlMs: 1000, commandTimeoutMs: 200 })
const downApp = await buildApp(config, { backends: await backendsFor(t, config, database, deadRedis), logStream: capture })
t.teardown(async () => { await downApp.close() })

/** Every request that reached Fastify, to match against the request lines of the log. */
let injected = 0
/** Of those, the ones answered before routing (bad percent-encoding in the path). */
let refusedBeforeRouting = 0
async function send (target: FastifyInstance, options: InjectOptions): Promise<{ status: number, body: string }> {
  injected++
  const response = await target.inject({ ...CLIENT, ...options, headers: { ...CLIENT.headers, ...options.headers } })
  return { status: response.statusCode, body: response.body }
}

/** Logs in and returns the issued token (remembered as a secret). */
async function tokenFrom (t: Test, what: string, options: InjectOptions): Promise<string> {
  const { status, body } = await send(app, options)
  t.equal(status, 200, `${what}: logged in`)
  const parsed: unknown = JSON.parse(body)
  const token = typeof parsed === 'object' && parsed !== null && 'token' in parsed && typeof parsed.token === 'string' ? parsed.token : ''
  t.match(token, /^2[A-Za-z0-9_-]{45}$/, `${what}: a token`)
  return rememberToken(token)
}

/** URLs the log must show, exactly, with their secret parts replaced. */
const expectedUrls = new Set<string>()

const users = ['query', 'form', 'json', 'legacy', 'refresh', 'bearer', 'spare'] as const
type User = typeof users[number]
const passwords = Object.fromEntries(users.map((u) => [u, password(u)])) as Record<User, string>
const name = (user: User): string => `log_${user}`

for (const user of users) await fixtureAccounts(app).add(name(user), passwords[user], false)

const tokens: Record<string, string> = {}

t.test('Login: query, form, JSON and path style, failing and succeeding', async (t) => {
  const query = new URLSearchParams({ username: name('query'), password: passwords.query }).toString()
  tokens.query = await tokenFrom(t, 'query', { method: 'POST', url: `/auth/Login?${query}` })
  expectedUrls.add(`/auth/Login?username=${name('query')}&password=[redacted]`)
  const wrongQuery = form({ username: name('query'), password: password('wrongquery') })
  t.equal((await send(app, { method: 'POST', url: `/auth/Login/?${wrongQuery}` })).status, 401, 'query: wrong password')
  expectedUrls.add(`/auth/Login?username=${name('query')}&password=[redacted]`)
  // A percent-encoded parameter name is still the password parameter.
  const encodedKey = `username=${name('query')}&pass%77ord=${encodeURIComponent(password('encodedkey'))}`
  t.equal((await send(app, { method: 'POST', url: `/auth/Login?${encodedKey}` })).status, 401, 'an encoded parameter name is the password parameter: Login Failed')
  expectedUrls.add(`/auth/Login?username=${name('query')}&pass%77ord=[redacted]`)

  tokens.form = await tokenFrom(t, 'form', { method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username: name('form'), password: passwords.form }) })
  t.equal((await send(app, { method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username: name('form'), password: password('wrongform') }) })).status, 401, 'form: wrong password')

  tokens.json = await tokenFrom(t, 'json', { method: 'POST', url: '/auth/Login', headers: JSON_TYPE, payload: JSON.stringify({ username: name('json'), password: passwords.json }) })
  t.equal((await send(app, { method: 'POST', url: '/auth/Login', headers: JSON_TYPE, payload: JSON.stringify({ username: name('json'), password: password('wrongjson') }) })).status, 401, 'JSON: wrong password')

  tokens.legacy = await tokenFrom(t, 'path style', { method: 'POST', url: `/auth/Login/${name('legacy')}/${encodeURIComponent(passwords.legacy)}` })
  expectedUrls.add('/auth/Login/:username/:password')
  t.equal((await send(app, { method: 'POST', url: `/auth/Login/${name('legacy')}/${encodeURIComponent(password('wronglegacy'))}` })).status, 401, 'path style: wrong password')
  t.equal((await send(app, { method: 'POST', url: `/auth/Login/nobody_${NONCE}/${encodeURIComponent(password('unknownuser'))}` })).status, 401, 'path style: unknown user')
  // Lower-case hex in the percent-encoding: the same password to the router.
  const lower = encodeURIComponent(passwords.legacy).replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase())
  await tokenFrom(t, 'path style, lower-case percent-encoding', { method: 'POST', url: `/auth/Login/${name('legacy')}/${lower}` })
})

t.test('Login reached through a percent-encoded route name', async (t) => {
  // The router decodes the whole path before matching, so these are the path-style Login too.
  const pw = passwords.spare
  for (const url of [`/auth/%4Cogin/${name('spare')}/${encodeURIComponent(pw)}`, `/%61uth/Login/${name('spare')}/${encodeURIComponent(pw)}`]) {
    await tokenFrom(t, `${url.slice(0, 14)}...: the router takes it as Login`, { method: 'POST', url })
  }
})

t.test('a presented token (refresh, Authorization header) on Login', async (t) => {
  const first = await tokenFrom(t, 'refresh', { method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username: name('refresh'), password: passwords.refresh }) })
  const again = await tokenFrom(t, 'refresh by token parameter', { method: 'POST', url: `/auth/Login?token=${first}`, headers: FORM, payload: form({ username: name('refresh'), password: passwords.refresh }) })
  t.equal(again, first, 'the presented token was refreshed')
  expectedUrls.add('/auth/Login?token=[redacted]')
  const byCookie = await tokenFrom(t, 'refresh by cookie', { method: 'POST', url: '/auth/Login', headers: { ...FORM, cookie: `AuthToken1=${first}` }, payload: form({ username: name('refresh'), password: passwords.refresh }) })
  t.equal(byCookie, first)
  tokens.refresh = first
  tokens.bearer = await tokenFrom(t, 'bearer', { method: 'POST', url: '/auth/Login', headers: { ...JSON_TYPE, authorization: `Bearer ${unknownToken()}` }, payload: JSON.stringify({ username: name('bearer'), password: passwords.bearer }) })
})

t.test('Authenticate: path, query, cookie, body, padding, Authorization', async (t) => {
  const active = (key: string): string => tokens[key] ?? ''
  const cases: Array<[string, InjectOptions, number, string?]> = [
    ['path', { method: 'GET', url: `/auth/Authenticate/${active('query')}` }, 200, '/auth/Authenticate/:token'],
    ['path, trailing slash', { method: 'GET', url: `/auth/Authenticate/${active('query')}/` }, 200, '/auth/Authenticate/:token'],
    ['query', { method: 'GET', url: `/auth/Authenticate?token=${active('form')}` }, 200, '/auth/Authenticate?token=[redacted]'],
    ['query, padded', { method: 'GET', url: `/auth/Authenticate?token=${active('form')}&callback=cb` }, 200, '/auth/Authenticate?token=[redacted]&callback=cb'],
    ['cookie', { method: 'GET', url: '/auth/Authenticate', headers: { cookie: `AuthToken1=${active('json')}` } }, 200, '/auth/Authenticate'],
    ['form body', { method: 'POST', url: '/auth/Authenticate', headers: FORM, payload: form({ token: active('legacy') }) }, 200],
    ['JSON body', { method: 'POST', url: '/auth/Authenticate', headers: JSON_TYPE, payload: JSON.stringify({ token: active('refresh') }) }, 200],
    ['Authorization header', { method: 'GET', url: '/auth/Authenticate', headers: { authorization: `Bearer ${active('bearer')}` } }, 200],
    ['unknown, path', { method: 'POST', url: `/auth/Authenticate/${unknownToken()}` }, 403],
    ['unknown, query', { method: 'GET', url: `/auth/Authenticate/?token=${unknownToken()}&format=json` }, 403, '/auth/Authenticate?token=[redacted]&format=json'],
    ['unknown, cookie', { method: 'GET', url: '/auth/Authenticate', headers: { cookie: `AuthToken1=${unknownToken()}` } }, 403],
    ['unknown, JSON body', { method: 'POST', url: '/auth/Authenticate', headers: JSON_TYPE, payload: JSON.stringify({ token: unknownToken() }) }, 403]
  ]
  for (const [what, options, status, url] of cases) {
    t.equal((await send(app, options)).status, status, `${what}: HTTP ${status}`)
    if (url !== undefined) expectedUrls.add(url)
  }
})

t.test('Logout: path, query, cookie, body, already ended', async (t) => {
  const active = (key: string): string => tokens[key] ?? ''
  const cases: Array<[string, InjectOptions, number, string?]> = [
    ['path', { method: 'POST', url: `/auth/Logout/${active('query')}` }, 200, '/auth/Logout/:token'],
    ['path, again', { method: 'POST', url: `/auth/Logout/${active('query')}` }, 403],
    ['query', { method: 'POST', url: `/auth/Logout?token=${active('form')}` }, 200, '/auth/Logout?token=[redacted]'],
    ['cookie', { method: 'POST', url: '/auth/Logout', headers: { cookie: `AuthToken1=${active('json')}` } }, 200],
    ['form body', { method: 'POST', url: '/auth/Logout', headers: FORM, payload: form({ token: active('legacy') }) }, 200],
    ['JSON body', { method: 'POST', url: '/auth/Logout', headers: JSON_TYPE, payload: JSON.stringify({ token: active('refresh') }) }, 200],
    ['Authorization header', { method: 'POST', url: '/auth/Logout', headers: { authorization: `Bearer ${active('bearer')}` } }, 200],
    ['unknown, query', { method: 'POST', url: `/auth/Logout/?token=${unknownToken()}` }, 403, '/auth/Logout?token=[redacted]'],
    ['unknown, cookie', { method: 'POST', url: '/auth/Logout', headers: { cookie: `AuthToken1=${unknownToken()}` } }, 403]
  ]
  for (const [what, options, status, url] of cases) {
    t.equal((await send(app, options)).status, status, `${what}: HTTP ${status}`)
    if (url !== undefined) expectedUrls.add(url)
  }
})

t.test('client errors that carry a secret: 400, 404, 405, 413, 415', async (t) => {
  const pw = (label: string): string => encodeURIComponent(password(label))
  const tooBig = 'x'.repeat(config.bodyLimitBytes + 10)
  const cases: Array<[string, InjectOptions, number]> = [
    ['400: bad percent-encoding in a path password', { method: 'POST', url: `/auth/Login/${name('spare')}/${pw('badpath')}%ZZ` }, 400],
    ['400: bad percent-encoding after a path token', { method: 'GET', url: `/auth/Authenticate/${unknownToken()}%E0%A4%A` }, 400],
    ['400: bad percent-encoding in a query password', { method: 'POST', url: `/auth/Login?username=${name('spare')}&password=${pw('badquery')}%ZZ` }, 400],
    ['400: bad percent-encoding in a form body', { method: 'POST', url: '/auth/Login', headers: FORM, payload: `username=a&password=${pw('badform')}%ZZ` }, 400],
    ['400: malformed JSON body', { method: 'POST', url: '/auth/Login', headers: JSON_TYPE, payload: `{"username":"a","password":${JSON.stringify(password('badjson'))}` }, 400],
    ['400: the password twice', { method: 'POST', url: `/auth/Login?username=a&password=${pw('twice1')}&password=${pw('twice2')}` }, 400],
    ['400: a token as an array', { method: 'POST', url: '/auth/Logout', headers: JSON_TYPE, payload: JSON.stringify({ token: [unknownToken()] }) }, 400],
    ['404: past a path password', { method: 'POST', url: `/auth/Login/${name('spare')}/${pw('past404')}/extra` }, 404],
    ['404: past a path token', { method: 'GET', url: `/auth/Authenticate/${unknownToken()}/extra` }, 404],
    ['404: a path token under a lower-case route', { method: 'POST', url: `/auth/logout/${unknownToken()}` }, 404],
    ['404: an encoded slash between route and credentials', { method: 'POST', url: `/auth/Login%2F${name('spare')}%2F${pw('slash404')}` }, 404],
    ['405: GET on path-style Login', { method: 'GET', url: `/auth/Login/${name('spare')}/${pw('get405')}` }, 405],
    ['405: PUT on Logout with a path token', { method: 'PUT', url: `/auth/Logout/${unknownToken()}` }, 405],
    ['405: DELETE with a query password', { method: 'DELETE', url: `/auth/Login?password=${pw('delete405')}` }, 405],
    ['405: TRACE with a query token', { method: 'TRACE' as InjectOptions['method'], url: `/auth/Authenticate?token=${unknownToken()}` }, 405],
    ['413: a form body over the limit', { method: 'POST', url: '/auth/Login', headers: FORM, payload: `username=a&password=${pw('big413')}&pad=${tooBig}` }, 413],
    ['413: a JSON body over the limit', { method: 'POST', url: '/auth/Logout', headers: JSON_TYPE, payload: JSON.stringify({ token: unknownToken(), pad: tooBig }) }, 413],
    ['415: an octet-stream body', { method: 'POST', url: '/auth/Login', headers: { 'content-type': 'application/octet-stream' }, payload: `username=a&password=${pw('bytes415')}` }, 415],
    ['415: an XML body with a token', { method: 'POST', url: '/auth/Authenticate', headers: { 'content-type': 'application/xml' }, payload: `<token>${unknownToken()}</token>` }, 415]
  ]
  for (const [what, options, status] of cases) {
    t.equal((await send(app, options)).status, status, what)
  }
  refusedBeforeRouting += 2
})

t.test('503: Redis cannot be reached', async (t) => {
  const cases: Array<[string, InjectOptions]> = [
    ['Login, JSON body', { method: 'POST', url: '/auth/Login', headers: JSON_TYPE, payload: JSON.stringify({ username: name('spare'), password: password('down503') }) }],
    ['Login, path style', { method: 'POST', url: `/auth/Login/${name('spare')}/${encodeURIComponent(password('downpath'))}` }],
    ['Authenticate, path', { method: 'GET', url: `/auth/Authenticate/${unknownToken()}` }],
    ['Authenticate, cookie', { method: 'POST', url: '/auth/Authenticate', headers: { cookie: `AuthToken1=${unknownToken()}` } }],
    ['Logout, query', { method: 'POST', url: `/auth/Logout?token=${unknownToken()}` }]
  ]
  for (const [what, options] of cases) {
    t.equal((await send(downApp, options)).status, 503, what)
  }
})

t.test('control characters in what is logged cannot forge a line', async (t) => {
  // Percent-encoded CR/LF stays encoded in the URL that is logged.
  t.equal((await send(app, { method: 'GET', url: '/x%0d%0ainjected%0A%7B%22level%22:60%7D' })).status, 404, 'encoded CR/LF: 404')
  expectedUrls.add('/[redacted]')

  // Over a socket, bytes the HTTP parser lets through into the URL (C1 controls, high bytes) arrive as they are.
  const server = await buildApp(config, { backends: app.backends, logStream: capture })
  t.teardown(async () => { await server.close() })
  await server.listen({ host: '127.0.0.1', port: 0 })
  const address = server.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  // Over a socket, bytes the HTTP parser lets into a URL (C1 controls, the UTF-8 of U+2028) arrive as latin1 characters.
  for (const [bytes, logged] of [
    [[0x85, 0xe2, 0x80, 0xa8], '/x\\u0085\u00e2\\u0080\u00a8injected'],
    [[0x7f, 0x1b], undefined]
  ] as Array<[number[], string | undefined]>) {
    const request = Buffer.concat([Buffer.from('GET /x'), Buffer.from(bytes), Buffer.from('injected HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')])
    const answer = await rawRequest(port, request)
    t.match(answer, /^HTTP\/1\.1 (404|400) /, `bytes ${bytes.map((b) => b.toString(16)).join(' ')} in the URL: answered`)
    if (answer.startsWith('HTTP/1.1 404')) {
      injected++
      if (logged !== undefined) expectedUrls.add(logged)
    }
  }
  const login = `username=${encodeURIComponent('evil\r\n{"level":60}\u0085\u2028')}&password=${encodeURIComponent(password('rawsocket'))}`
  const viaSocket = await rawRequest(port, Buffer.from(`POST /auth/Login?${login} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${unknownToken()}\r\nCookie: AuthToken1=${unknownToken()}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`))
  injected++
  // Such a name is no username at all (canonical usernames): refused before any lookup; its line is checked below.
  t.match(viaSocket, /^HTTP\/1\.1 400 /, 'a raw Login with a control-character username: Bad Request')

  // The bootstrap account's name is user text that goes into a log record as a field.
  const bootstrapName = `boot_${NONCE}\r\n{"level":60,"msg":"forged"}\n\u001b[31m\u0085\u2028`
  // Such a name cannot be an account (canonical usernames): the start stops on a configuration error, and logs nothing of it.
  let refused: unknown
  try {
    await bootstrapAccount(server, { ...config, bootstrapUsername: bootstrapName, bootstrapPassword: password('bootstrap') })
  } catch (error) {
    refused = error
  }
  t.match(refused, { variable: 'AUTH_BOOTSTRAP_USERNAME' }, 'a control-character bootstrap name stops the start')
  const bootName = `boot_${NONCE}.{"level":60,"msg":"forged"}`.toLowerCase()
  await bootstrapAccount(server, { ...config, bootstrapUsername: bootName, bootstrapPassword: password('bootstrap') })
  await bootstrapAccount(server, { ...config, bootstrapUsername: bootName, bootstrapPassword: password('bootstrapchanged'), bootstrapReset: true })
  const bootLines = capture.writes.filter((line) => line.includes('bootstrap account'))
  t.equal(bootLines.length, 2, 'two bootstrap lines (created, password reset), each one line: checked with all lines below')
  for (const line of bootLines) {
    const record = JSON.parse(line) as LogRecord
    t.equal(record.username, bootName, 'the username is a field of its own')
  }
})

t.test('every captured line: one JSON record, no secret', async (t) => {
  const lines = capture.writes
  t.ok(lines.length > 50, `${lines.length} log lines captured`)

  const joined = lines.join('')
  t.equal(joined.split('\n').length - 1, lines.length, 'as many newlines as records: no record spans or forges a line')
  const records: LogRecord[] = []
  let unparsable = 0
  for (const line of lines) {
    if (!line.endsWith('\n') || line.slice(0, -1).includes('\n') || line.includes('\r')) unparsable++
    try {
      records.push(JSON.parse(line) as LogRecord)
    } catch {
      unparsable++
    }
  }
  t.equal(unparsable, 0, 'every line is one JSON record ending in a newline')
  // Escaped, not raw: log viewers that split on NEL or U+2028/U+2029 (as Unicode line breaking does) must see one line too.
  // eslint-disable-next-line no-control-regex -- a raw control character in a line is what it looks for
  const rawControls = lines.filter((line) => /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(line.slice(0, -1))).map(printable)
  t.same(rawControls, [], 'no line holds a raw control character or Unicode line separator')
  t.ok(records.every((r) => typeof r.level === 'number'), 'every record has a level')

  // Request lines carry the redacted request (`req`); one request may have more than one line, all with its id.
  const requestLines = records.filter((r) => r.req !== undefined)
  const requestIds = new Set(requestLines.map((r) => r.reqId))
  // Requests the router refuses before routing (undecodable paths) may go unlogged; none may be logged twice over or forged.
  t.ok(requestIds.size <= injected && requestIds.size >= injected - refusedBeforeRouting,
    `request lines for ${requestIds.size} of the ${injected} requests sent (${refusedBeforeRouting} refused before routing)`)
  t.notOk(records.some((r) => r.msg === 'forged' || r.level >= 60), 'no record was forged from request text')

  // A 400's line says why; the search for secrets below covers the reasons too.
  const badRequests = requestLines.filter((r) => r.statusCode === 400)
  t.ok(badRequests.length >= 7, `the 400s were logged (${badRequests.length} lines)`)
  t.same(badRequests.filter((r) => typeof r.detail !== 'string' || r.detail === '').map((r) => r.req?.url), [], 'every 400 line carries its detail')
  t.notOk(requestLines.some((r) => r.statusCode !== 400 && 'detail' in r), 'no other line does')

  const loggedUrls = new Set(requestLines.map((r) => r.req?.url))
  for (const url of expectedUrls) t.ok(loggedUrls.has(url), `logged as ${url}`)
  const unredacted = [...loggedUrls].filter((url) => url !== undefined && /^\/+auth\/+(Login|Authenticate|Logout)\/+[^[:]/i.test(url.split('?')[0] ?? ''))
  t.same(unredacted, [], 'every /auth/<operation>/... path is logged as its route template or [redacted]')

  t.ok(secrets.length > 60, `${secrets.length} secrets sent`)
  const leaks: string[] = []
  const lowered = lines.map((line) => line.toLowerCase())
  for (const secret of secrets) {
    for (const leakForm of leakForms(secret)) {
      const needle = leakForm.toLowerCase()
      const at = lowered.findIndex((line) => line.includes(needle))
      if (at >= 0) leaks.push(`${secret.core} (as ${JSON.stringify(leakForm)}) in: ${printable(lines[at]?.slice(0, 300) ?? '')}`)
    }
  }
  t.same(leaks, [], 'no password and no token in any form in any line')

  // Five 503s for want of Redis: one short line (a line per cause per 10 s, packages/protocol/src/throttled-log.ts), searched too.
  const unavailable = records.filter((r) => r.level >= 50 && r.unavailable === 'redis')
  t.ok(unavailable.length >= 1 && unavailable.length < 5, `the 503s were logged as errors (${unavailable.length} line(s) for 5), and were searched too`)
})
