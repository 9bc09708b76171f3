import t, { type Test } from 'tap'
import { buildApp } from '../../src/app/app.js'
import { openLoginLimiter, type Backends } from '../../src/app/backends.js'
import { createPostgresDatabase } from '../../src/db/postgres.js'
import { createRedisTokenStore } from '../../src/core/stores/redis/token-store.js'
import { createSqlUserStore } from '../../src/core/stores/user-store.js'
import { buildTestApp } from '../support/app.js'
import {
  allowed, assertNoLeak, assertPrivacyHeaders, assertStatus, BODIES, badRequestBody, form, FORM, JSON_HEADERS, statusBody, tokenFor,
  unknownToken, type InjectOptions
} from './support.js'

/** The error model on every route (contract, wire format): status-message bodies, HTTP statuses, headers. */

const testApp = await buildTestApp(t, 'real')
const { app } = testApp
await testApp.addUser('alice', 'pw')
const good = await tokenFor(t, app, 'alice', 'pw')

const KIB16 = 16 * 1024

t.test('unknown routes: 404 status-message', async (t) => {
  const cases: Array<[InjectOptions['method'], string]> = [
    ['GET', '/auth'], ['GET', '/index.html'], ['POST', '/auth/'], ['GET', '/auth/nope'], ['POST', '/auth/login'], ['POST', '/auth/LOGIN'],
    ['GET', '/auth/authenticate'], ['GET', `/auth/Authenticate/${good}/extra`], ['POST', `/auth/Logout/${good}/extra`],
    ['POST', '/auth/Login/a/b/c'], ['GET', '/robots.txt'], ['DELETE', '/nothing/here?x=1'], ['GET', '/auth/Authenticate2']
  ]
  for (const [method, url] of cases) {
    assertStatus(t, await app.inject({ method, url }), 404, BODIES.notFound, `${String(method)} ${url.slice(0, 40)}`)
  }
  t.equal((await app.inject({ method: 'GET', url: `/auth/Authenticate/${good}` })).statusCode, 200, 'the token was never touched')
})

t.test('wrong methods: 405 with the right Allow', async (t) => {
  const cases: Array<[string, string[], string[]]> = [
    ['/auth/Login', ['GET', 'PUT', 'DELETE', 'PATCH', 'TRACE', 'OPTIONS'], ['POST']],
    ['/auth/Login/', ['GET', 'PUT', 'DELETE'], ['POST']],
    ['/auth/Login/alice/pw', ['GET', 'PUT', 'DELETE'], ['POST']],
    ['/auth/Authenticate', ['PUT', 'DELETE', 'PATCH', 'TRACE', 'OPTIONS'], ['GET', 'POST']],
    [`/auth/Authenticate/${good}`, ['PUT', 'DELETE', 'PATCH'], ['GET', 'POST']],
    ['/auth/Logout', ['GET', 'PUT', 'DELETE', 'PATCH', 'TRACE'], ['POST']],
    [`/auth/Logout/${good}`, ['GET', 'DELETE'], ['POST']]
  ]
  for (const [url, methods, allow] of cases) {
    for (const method of methods) {
      const res = await app.inject({ method: method as InjectOptions['method'], url })
      const what = `${method} ${url.slice(0, 30)}`
      assertStatus(t, res, 405, BODIES.methodNotAllowed, what)
      t.same(allowed(res), allow, `${what}: Allow: ${allow.join(', ')}`)
    }
  }
  const head = await app.inject({ method: 'HEAD', url: '/auth/Login' })
  t.equal(head.statusCode, 405, 'HEAD /auth/Login: 405')
  t.same(allowed(head), ['POST'], 'HEAD /auth/Login: Allow: POST')
  assertPrivacyHeaders(t, head, 'HEAD /auth/Login')
  t.equal((await app.inject({ method: 'GET', url: `/auth/Authenticate/${good}` })).statusCode, 200, 'the token is still active after all that')
})

t.test('bodies over 16 KiB: 413; up to the limit: not 413', async (t) => {
  const bigForm = `username=alice&password=pw&pad=${'x'.repeat(KIB16)}`
  const bigJson = JSON.stringify({ username: 'alice', password: 'pw', pad: 'x'.repeat(KIB16) })
  for (const url of ['/auth/Login', '/auth/Authenticate', '/auth/Logout', `/auth/Logout/${good}`, `/auth/Authenticate/${good}`, '/auth/Login/alice/pw']) {
    assertStatus(t, await app.inject({ method: 'POST', url, headers: FORM, payload: bigForm }), 413, BODIES.payloadTooLarge, `form body to ${url.slice(0, 25)}`)
    assertStatus(t, await app.inject({ method: 'POST', url, headers: JSON_HEADERS, payload: bigJson }), 413, BODIES.payloadTooLarge, `JSON body to ${url.slice(0, 25)}`)
  }
  const atLimit = `token=${'x'.repeat(KIB16 - 'token='.length - 'format=json&'.length)}&format=json`
  t.equal(Buffer.byteLength(atLimit), KIB16)
  const res = await app.inject({ method: 'POST', url: '/auth/Authenticate', headers: FORM, payload: atLimit })
  t.not(res.statusCode, 413, `exactly 16 KiB is within the limit (HTTP ${res.statusCode})`)
  t.equal(res.json<{ status: number }>().status, res.statusCode, 'and its answer is a status-message')
  t.equal((await app.inject({ method: 'GET', url: `/auth/Authenticate/${good}` })).statusCode, 200, 'the token was never ended')
})

t.test('bodies that are neither form nor JSON: 415', async (t) => {
  const victim = await tokenFor(t, app, 'alice', 'pw')
  for (const type of ['text/xml', 'application/xml', 'text/plain', 'application/octet-stream', 'multipart/form-data; boundary=x']) {
    for (const url of ['/auth/Login', '/auth/Authenticate', '/auth/Logout', `/auth/Logout/${victim}`, '/auth/Login/alice/pw']) {
      const res = await app.inject({ method: 'POST', url, headers: { 'content-type': type }, payload: `token=${victim}` })
      assertStatus(t, res, 415, BODIES.unsupportedMediaType, `${type} to ${url.slice(0, 25)}`)
    }
  }
  t.equal((await app.inject({ method: 'GET', url: `/auth/Authenticate/${victim}` })).statusCode, 200, 'the token was never ended')
})

t.test('malformed bodies: 400 saying what is wrong', async (t) => {
  const notJson = 'body is not valid JSON, or holds a __proto__ key'
  const cases: Array<[string, string, string, string]> = [
    ['truncated JSON', 'application/json', '{"username":"alice",', notJson],
    ['JSON with a trailing comma', 'application/json', '{"username":"alice","password":"pw",}', notJson],
    ['empty JSON body', 'application/json', '', 'body is empty but Content-Type is application/json'],
    ['JSON string', 'application/json', '"alice"', 'body must be an object of parameters'],
    ['JSON array', 'application/json', '["alice","pw"]', 'body must be an object of parameters'],
    ['JSON number', 'application/json', '42', 'body must be an object of parameters'],
    ['JSON __proto__', 'application/json', '{"__proto__":{"admin":true},"username":"alice","password":"pw"}', notJson],
    ['JSON nested __proto__', 'application/json', '{"username":"alice","password":"pw","x":{"__proto__":{"admin":true}}}', notJson],
    ['form __proto__', 'application/x-www-form-urlencoded', '__proto__=1&username=alice&password=pw', 'form body has a __proto__ parameter'],
    ['form __proto__, percent-encoded', 'application/x-www-form-urlencoded', '%5F%5Fproto%5F%5F=1&username=alice&password=pw', 'form body has a __proto__ parameter'],
    ['form __proto__ as the last key', 'application/x-www-form-urlencoded', 'username=alice&password=pw&__proto__=admin', 'form body has a __proto__ parameter'],
    ['form with undecodable percent-encoding', 'application/x-www-form-urlencoded', 'username=alice&password=%E0%A4%A', 'password has undecodable percent-encoding'],
    ['form with a stray %', 'application/x-www-form-urlencoded', 'username=alice&password=100%', 'password has undecodable percent-encoding'],
    ['form with bad UTF-8', 'application/x-www-form-urlencoded', 'username=alice&password=%C3%28', 'password has undecodable percent-encoding'],
    ['form with a bad parameter name', 'application/x-www-form-urlencoded', 'username=alice&pass%ZZ=pw', 'a parameter name in the form body has undecodable percent-encoding'],
    ['form with a bad unknown parameter', 'application/x-www-form-urlencoded', 'username=alice&password=pw&x=%ZZ', 'form body has undecodable percent-encoding']
  ]
  for (const [what, type, payload, detail] of cases) {
    // An empty JSON body is only certainly malformed where parameters are required.
    const urls = what === 'empty JSON body' ? ['/auth/Login'] : ['/auth/Login', '/auth/Authenticate', '/auth/Logout']
    for (const url of urls) {
      const res = await app.inject({ method: 'POST', url, headers: { 'content-type': type }, payload })
      assertStatus(t, res, 400, badRequestBody(detail), `${what} to ${url}`)
    }
  }
  t.equal(({} as Record<string, unknown>).admin, undefined, 'no prototype was polluted')
  t.equal((await app.inject({ method: 'GET', url: `/auth/Authenticate/${good}` })).statusCode, 200, 'the token was never ended')
})

t.test('undecodable percent-encoding in the path or the query: 400 saying where', async (t) => {
  const cases: Array<[InjectOptions['method'], string, string]> = [
    ['GET', '/auth/Authenticate/%E0%A4%A', 'path has undecodable percent-encoding'],
    ['GET', '/auth/Authenticate/%ZZ', 'path has undecodable percent-encoding'],
    ['POST', '/auth/Authenticate/%C3%28', 'path has undecodable percent-encoding'],
    ['POST', '/auth/Logout/%', 'path has undecodable percent-encoding'],
    ['POST', '/auth/Login/alice/%E0%A4%A', 'path has undecodable percent-encoding'],
    ['POST', '/auth/Login/%ZZ/pw', 'path has undecodable percent-encoding'],
    ['GET', '/auth/Authenticate?token=%ZZ', 'token has undecodable percent-encoding'],
    ['GET', `/auth/Authenticate/${good}?callback=%E0%A4%A`, 'callback has undecodable percent-encoding'],
    ['POST', '/auth/Login?username=alice&password=%E0%A4%A', 'password has undecodable percent-encoding'],
    ['POST', '/auth/Logout?token=%', 'token has undecodable percent-encoding'],
    ['POST', '/auth/Logout?t%ZZken=x', 'a parameter name in the query string has undecodable percent-encoding'],
    ['GET', '/auth/Authenticate?token=x&other=%ZZ', 'query string has undecodable percent-encoding'],
    ['GET', '/auth/Authenticate?__proto__=x', 'query string has a __proto__ parameter'],
    ['POST', '/auth/Login?%5F%5Fproto%5F%5F=x&username=alice&password=pw', 'query string has a __proto__ parameter']
  ]
  for (const [method, url, detail] of cases) {
    assertStatus(t, await app.inject({ method, url }), 400, badRequestBody(detail), `${String(method)} ${url.slice(0, 50)}`)
  }
  const withBody = await app.inject({ method: 'POST', url: '/auth/Login?password=%ZZ', headers: FORM, payload: form({ username: 'alice', password: 'pw' }) })
  assertStatus(t, withBody, 400, badRequestBody('password has undecodable percent-encoding'), 'a bad query is refused even when the body is good')
})

t.test('successes and padded answers carry the privacy headers too', async (t) => {
  const login = await app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username: 'alice', password: 'pw' }) })
  t.equal(login.statusCode, 200)
  assertPrivacyHeaders(t, login, 'Login success')
  const auth = await app.inject({ method: 'GET', url: `/auth/Authenticate/${good}` })
  assertPrivacyHeaders(t, auth, 'Authenticate success')
  assertPrivacyHeaders(t, await app.inject({ method: 'GET', url: `/auth/Authenticate/${good}?callback=cb` }), 'padded Authenticate')
  const logout = await app.inject({ method: 'POST', url: `/auth/Logout/${login.json<{ token: string }>().token}` })
  t.equal(logout.statusCode, 200)
  assertPrivacyHeaders(t, logout, 'Logout success')
  assertPrivacyHeaders(t, await app.inject({ method: 'GET', url: '/nope' }), 'a 404 outside /auth')
})

/**
 * An app on stores that cannot be reached: every answer must be 503, never a false
 * Success. The backends are a working test app's with one store swapped for a dead one.
 */
async function deadApp (t: Test, dead: 'redis' | 'postgres') {
  const base = await buildTestApp(t, 'real')
  let backends: Backends
  if (dead === 'redis') {
    const tokens = createRedisTokenStore({ url: 'redis://127.0.0.1:1', denyTtlMs: 1000, commandTimeoutMs: 200 })
    tokens.ready().catch(() => {})
    // The login limiter lives on the token store's Redis, so it is unreachable too.
    const limiter = openLoginLimiter(base.config, tokens)
    backends = { ...base.app.backends, tokens, limiter, async close () { await limiter.close(); await tokens.close() } }
  } else {
    const database = createPostgresDatabase({ connectionString: 'postgres://postgres@127.0.0.1:1/none', connectionTimeoutMillis: 300 })
    backends = { ...base.app.backends, database, users: createSqlUserStore(database), async close () { await database.close() } }
  }
  const app = await buildApp(base.config, { backends, logger: { level: 'silent' } })
  t.teardown(async () => {
    await app.close()
    await backends.close()
  })
  return { app, base }
}

t.test('Redis unreachable: Login, Authenticate and Logout answer 503, never Success', async (t) => {
  const { app: dead, base } = await deadApp(t, 'redis')
  await base.addUser('alice', 'pw')
  const token = unknownToken()
  const started = Date.now()
  const cases: Array<[string, InjectOptions]> = [
    ['Login', { method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username: 'alice', password: 'pw' }) }],
    ['Login refreshing a cookie token', { method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username: 'alice', password: 'pw' }), cookies: { AuthToken1: token } }],
    ['Login, legacy path', { method: 'POST', url: '/auth/Login/alice/pw' }],
    ['Authenticate (path)', { method: 'GET', url: `/auth/Authenticate/${token}` }],
    ['Authenticate (cookie)', { method: 'GET', url: '/auth/Authenticate', cookies: { AuthToken1: token } }],
    ['Authenticate (POST form)', { method: 'POST', url: '/auth/Authenticate', headers: FORM, payload: form({ token }) }],
    ['Logout (path)', { method: 'POST', url: `/auth/Logout/${token}` }],
    ['Logout (cookie)', { method: 'POST', url: '/auth/Logout', headers: FORM, payload: '', cookies: { AuthToken1: token } }]
  ]
  for (const [what, options] of cases) {
    assertStatus(t, await dead.inject(options), 503, BODIES.serviceUnavailable, what)
  }
  const padded = await dead.inject({ method: 'GET', url: `/auth/Authenticate/${token}?callback=cb` })
  t.equal(padded.body, `function cb() {return ${statusBody(503, 'Service Unavailable')};}`, 'padded Authenticate carries the 503, not Success')
  t.notOk(padded.body.includes('"status":0'), 'never a padded Success')
  // No hang is the promise: a generous bound, that a busy machine does not reach.
  t.ok(Date.now() - started < 30_000, `answers come, no hang (${Date.now() - started} ms for all)`)
  const failed = await dead.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username: 'alice', password: 'wrong' }) })
  t.ok(failed.body === BODIES.loginFailed || failed.body === BODIES.serviceUnavailable, `a wrong password: Login Failed or 503, never Success (${failed.body})`)
})

t.test('Postgres unreachable: Login answers 503', async (t) => {
  const { app: dead } = await deadApp(t, 'postgres')
  const res = await dead.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username: 'alice', password: 'pw' }) })
  assertStatus(t, res, 503, BODIES.serviceUnavailable, 'Login')
  const legacy = await dead.inject({ method: 'POST', url: '/auth/Login/alice/pw' })
  assertStatus(t, legacy, 503, BODIES.serviceUnavailable, 'legacy Login')
  assertNoLeak(t, legacy, 'legacy Login')
})
