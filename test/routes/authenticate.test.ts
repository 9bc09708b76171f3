import t, { type Test } from 'tap'
import { keyLayout } from '@auth-token-service/protocol/layout'
import { hashToken, sha256 } from '@auth-token-service/protocol/token'
import { buildTestApp } from '../support/app.js'
import {
  assertPrivacyHeaders, assertStatus, BODIES, badRequestBody, expiredToken, form, FORM, headerNames, JSON_HEADERS, JSON_TYPE,
  loginForm, parseExpiration, sleep, tokenFor, unauthorizedAnswers, unknownToken, type InjectOptions, type LoginSuccess, type Reply
} from './support.js'

/** GET or POST /auth/Authenticate (contract): where the token comes from, 403s, format, padding, no extension. */

const testApp = await buildTestApp(t, 'real')
const { app } = testApp
await testApp.addUser('alice', 'pw')

const login = (await loginForm(app, 'alice', 'pw')).res.json<LoginSuccess>()
const good = login.token
const bad = unknownToken()
const cookie = (token: string) => ({ AuthToken1: token })

function assertActive (t: Test, res: Reply, what: string): void {
  t.equal(res.statusCode, 200, `${what}: HTTP 200`)
  t.equal(res.headers['content-type'], JSON_TYPE, `${what}: JSON`)
  assertPrivacyHeaders(t, res, what)
  const body = res.json<Record<string, unknown>>()
  t.same(Object.keys(body).slice(0, 2), ['status', 'message'], `${what}: status and message come first`)
  t.equal(body.status, 0, `${what}: status 0`)
  t.equal(body.message, 'Success', `${what}: Success`)
  if ('expiration_date' in body) t.equal(body.expiration_date, login.expiration_date, `${what}: the token's expiration_date`)
}

t.test('an active token is accepted from the path, the query, the cookie and a POST body', async (t) => {
  const ways: Array<[string, InjectOptions]> = [
    ['GET path', { method: 'GET', url: `/auth/Authenticate/${good}` }],
    ['GET path, trailing slash', { method: 'GET', url: `/auth/Authenticate/${good}/` }],
    ['GET query', { method: 'GET', url: `/auth/Authenticate?token=${good}` }],
    ['GET query, trailing slash', { method: 'GET', url: `/auth/Authenticate/?token=${good}&format=json` }],
    ['GET cookie', { method: 'GET', url: '/auth/Authenticate', cookies: cookie(good) }],
    ['GET cookie, trailing slash', { method: 'GET', url: '/auth/Authenticate/', cookies: cookie(good) }],
    ['POST form body', { method: 'POST', url: '/auth/Authenticate', headers: FORM, payload: form({ token: good }) }],
    ['POST JSON body', { method: 'POST', url: '/auth/Authenticate', headers: JSON_HEADERS, payload: JSON.stringify({ token: good }) }],
    ['POST path, no body', { method: 'POST', url: `/auth/Authenticate/${good}` }],
    ['POST path, trailing slash, no body', { method: 'POST', url: `/auth/Authenticate/${good}/` }],
    ['POST query, no body', { method: 'POST', url: `/auth/Authenticate?token=${good}&format=json` }],
    ['POST cookie, no body', { method: 'POST', url: '/auth/Authenticate', cookies: cookie(good) }]
  ]
  for (const [what, options] of ways) assertActive(t, await app.inject(options), what)
})

t.test('precedence: path, then query, then cookie', async (t) => {
  const get = async (url: string, token?: string) =>
    await app.inject({ method: 'GET', url, ...(token === undefined ? {} : { cookies: cookie(token) }) })
  assertActive(t, await get(`/auth/Authenticate/${good}?token=${bad}`), 'good path, bad query')
  assertStatus(t, await get(`/auth/Authenticate/${bad}?token=${good}`), 403, BODIES.unauthorized, 'bad path, good query')
  assertActive(t, await get(`/auth/Authenticate?token=${good}`, bad), 'good query, bad cookie')
  assertStatus(t, await get(`/auth/Authenticate?token=${bad}`, good), 403, BODIES.unauthorized, 'bad query, good cookie')
  assertStatus(t, await get(`/auth/Authenticate/${bad}`, good), 403, BODIES.unauthorized, 'bad path, good cookie')
  assertActive(t, await get(`/auth/Authenticate/${good}`, bad), 'good path, bad cookie')
})

t.test('missing, unknown, expired, terminated and malformed tokens: byte-identical 403s', async (t) => {
  const expired = await expiredToken(t, testApp, 'alice', 'pw')
  const terminated = await tokenFor(t, app, 'alice', 'pw')
  t.equal((await app.inject({ method: 'POST', url: `/auth/Logout/${terminated}` })).statusCode, 200, 'logged out')

  const cases: Array<[string, InjectOptions]> = [
    ['missing (GET)', { method: 'GET', url: '/auth/Authenticate' }],
    ['missing (POST, no body)', { method: 'POST', url: '/auth/Authenticate' }],
    ['missing (POST, empty form)', { method: 'POST', url: '/auth/Authenticate', headers: FORM, payload: '' }],
    ['empty token parameter', { method: 'GET', url: '/auth/Authenticate?token=' }],
    ['unknown (path)', { method: 'GET', url: `/auth/Authenticate/${bad}` }],
    ['unknown (cookie)', { method: 'GET', url: '/auth/Authenticate', cookies: cookie(bad) }],
    ['expired (path)', { method: 'GET', url: `/auth/Authenticate/${expired}` }],
    ['expired (query)', { method: 'GET', url: `/auth/Authenticate?token=${expired}` }],
    ['terminated (path)', { method: 'GET', url: `/auth/Authenticate/${terminated}` }],
    ['terminated (cookie)', { method: 'GET', url: '/auth/Authenticate', cookies: cookie(terminated) }],
    ['malformed: short', { method: 'GET', url: '/auth/Authenticate/abc' }],
    ['malformed: one character too long', { method: 'GET', url: `/auth/Authenticate/${good}A` }],
    ['malformed: a good token with a stray character', { method: 'GET', url: `/auth/Authenticate?token=${encodeURIComponent(`${good.slice(0, 42)}*`)}` }],
    ['malformed: Redis glob', { method: 'GET', url: `/auth/Authenticate/${encodeURIComponent('*'.repeat(43))}` }],
    ['malformed: CRLF', { method: 'GET', url: `/auth/Authenticate?token=${encodeURIComponent('a\r\nFLUSHALL\r\n')}` }],
    ['the stored hash of a good token is no token', { method: 'GET', url: `/auth/Authenticate/${hashToken(good)}` }]
  ]
  const { first, answers } = await unauthorizedAnswers(t, app, cases)
  for (const [i, res] of answers.entries()) {
    t.equal(res.rawPayload.compare(first.rawPayload), 0, `${cases[i]?.[0] ?? ''}: same bytes as a missing token`)
    t.same(headerNames(res), headerNames(first), `${cases[i]?.[0] ?? ''}: same header names as a missing token`)
  }
  assertActive(t, await app.inject({ method: 'GET', url: `/auth/Authenticate/${good}` }), 'the good token is still active')
})

t.test('a 43-character token of before 0.2.0 is malformed: a 403 as for an unknown token, its old key never read', async (t) => {
  const redis = testApp.redisStore?.redis
  if (redis === undefined) throw new Error('the real app has Redis')
  const prefix = testApp.redisPrefix ?? ''
  // Where the earlier layout kept such a token: the bare digest under the prefix itself, holding an active record of alice's.
  const old = 'B'.repeat(43)
  const oldKey = `${prefix}t:${sha256(old).slice(0, 22)}`
  const value = await redis.get(keyLayout(prefix).tokenKey(hashToken(good)))
  if (value === null) throw new Error('the good token has a key')
  await redis.set(oldKey, value, 'PX', 60_000)
  t.teardown(async () => { await redis.del(oldKey) })
  const missing = await app.inject({ method: 'GET', url: '/auth/Authenticate' })
  for (const [what, options] of [
    ['path', { method: 'GET', url: `/auth/Authenticate/${old}` }],
    ['query', { method: 'GET', url: `/auth/Authenticate?token=${old}` }],
    ['cookie', { method: 'GET', url: '/auth/Authenticate', cookies: cookie(old) }],
    ['form body', { method: 'POST', url: '/auth/Authenticate', headers: FORM, payload: form({ token: old }) }]
  ] as Array<[string, InjectOptions]>) {
    const res = await app.inject(options)
    assertStatus(t, res, 403, BODIES.unauthorized, what)
    t.equal(res.rawPayload.compare(missing.rawPayload), 0, `${what}: same bytes as a missing token`)
  }
  assertStatus(t, await app.inject({ method: 'POST', url: `/auth/Logout/${old}` }), 403, BODIES.unauthorized, 'Logout of it: 403')
  t.equal(await redis.get(oldKey), value, 'the old key is left alone (it expires on its own)')
  assertActive(t, await app.inject({ method: 'GET', url: `/auth/Authenticate/${good}` }), 'the good token is still active')
})

t.test('format: json (the default) is accepted; anything else is 400', async (t) => {
  assertActive(t, await app.inject({ method: 'GET', url: `/auth/Authenticate/${good}?format=json` }), 'format=json')
  assertActive(t, await app.inject({ method: 'POST', url: '/auth/Authenticate', headers: FORM, payload: form({ token: good, format: 'json' }) }), 'format=json in a form body')
  for (const format of ['xml', 'JSON', 'jsonp', '']) {
    assertStatus(t, await app.inject({ method: 'GET', url: `/auth/Authenticate/${good}?format=${format}` }), 400, badRequestBody('format must be json'), `format=${format}`)
  }
  assertStatus(t, await app.inject({ method: 'GET', url: `/auth/Authenticate/${bad}?format=xml` }), 400, badRequestBody('format must be json'), 'format=xml for an unknown token is still a 400')
  assertStatus(t, await app.inject({ method: 'GET', url: `/auth/Authenticate/${good}?format=json&format=json` }), 400, badRequestBody('format given more than once'), 'format given twice')
  assertStatus(t, await app.inject({ method: 'GET', url: `/auth/Authenticate?token=${good}&token=${good}` }), 400, badRequestBody('token given more than once'), 'token given twice')
  assertStatus(t, await app.inject({ method: 'POST', url: '/auth/Authenticate', headers: JSON_HEADERS, payload: JSON.stringify({ token: [good] }) }), 400, badRequestBody('token must be a string'), 'token as a JSON array')
  assertStatus(t, await app.inject({ method: 'POST', url: '/auth/Authenticate', headers: JSON_HEADERS, payload: JSON.stringify({ token: 1 }) }), 400, badRequestBody('token must be a string'), 'token as a JSON number')
  assertStatus(t, await app.inject({ method: 'GET', url: '/auth/Authenticate?token=a%00b' }), 400, badRequestBody('token contains a NUL character'), 'NUL in the token')
})

function assertPadded (t: Test, res: Reply, name: string, status: number, message: string, what: string): void {
  t.equal(res.statusCode, 200, `${what}: HTTP 200 so that a script tag runs it`)
  t.equal(res.body, `function ${name}() {return {"status":${status},"message":"${message}"};}`, `${what}: exact padded body`)
  t.equal(res.headers['content-type'], 'application/javascript; charset=utf-8', `${what}: JavaScript content type`)
  t.equal(res.headers['x-content-type-options'], 'nosniff', `${what}: nosniff`)
  assertPrivacyHeaders(t, res, what)
}

t.test('padding function: four parameter names, exact body, 200 even when unauthorized', async (t) => {
  for (const parameter of ['jsonpFunction', 'jsopFunction', 'jsonpFormat', 'callback']) {
    assertPadded(t, await app.inject({ method: 'GET', url: `/auth/Authenticate/${good}?${parameter}=cb` }), 'cb', 0, 'Success', `${parameter}, active`)
    assertPadded(t, await app.inject({ method: 'GET', url: `/auth/Authenticate/${bad}?format=json&${parameter}=cb` }), 'cb', 403, 'Unauthorized', `${parameter}, unknown token`)
  }
  assertPadded(t, await app.inject({ method: 'GET', url: '/auth/Authenticate?callback=cb' }), 'cb', 403, 'Unauthorized', 'missing token')
  assertPadded(t, await app.inject({ method: 'GET', url: '/auth/Authenticate?callback=cb', cookies: cookie(good) }), 'cb', 0, 'Success', 'cookie token')
  assertPadded(t, await app.inject({ method: 'POST', url: '/auth/Authenticate', headers: FORM, payload: form({ token: good, jsonpFunction: 'cb' }) }), 'cb', 0, 'Success', 'POST form body')
  for (const name of ['$', '_', 'a', '$jQuery_123', `A${'b'.repeat(63)}`]) {
    assertPadded(t, await app.inject({ method: 'GET', url: `/auth/Authenticate/${good}?callback=${encodeURIComponent(name)}` }), name, 0, 'Success', `name ${name.slice(0, 10)}`)
  }
})

t.test('an invalid padding-function name is a 400 in JSON', async (t) => {
  const reserved = new Set(['undefined', 'if', 'function'])
  const names = ['undefined', '1abc', 'a-b', 'a.b', `A${'b'.repeat(64)}`, 'if', 'function', 'alert(1)', 'cb;alert(1)//', 'a b', '', '\u00e9', '<script>']
  for (const name of names) {
    for (const parameter of ['callback', 'jsonpFunction']) {
      const res = await app.inject({ method: 'GET', url: `/auth/Authenticate/${good}?${parameter}=${encodeURIComponent(name)}` })
      const detail = `padding function name in ${parameter} is ${reserved.has(name) ? 'a reserved word' : 'not a valid identifier'}`
      assertStatus(t, res, 400, badRequestBody(detail), `${parameter}=${JSON.stringify(name.slice(0, 12))}`)
      t.notMatch(res.body, /^function /, `${parameter}=${JSON.stringify(name.slice(0, 12))}: nothing padded`)
    }
  }
  assertStatus(t, await app.inject({ method: 'GET', url: `/auth/Authenticate/${good}?callback=cb&callback=cb` }), 400, badRequestBody('callback given more than once'), 'callback given twice')
  assertStatus(t, await app.inject({ method: 'GET', url: `/auth/Authenticate/${good}?callback=a&jsonpFunction=b` }), 400, badRequestBody('two different padding function names given'), 'two different names (docs/decisions.md)')
  assertPadded(t, await app.inject({ method: 'GET', url: `/auth/Authenticate/${good}?callback=cb&jsonpFunction=cb` }), 'cb', 0, 'Success', 'one name under two spellings (docs/decisions.md)')
  assertStatus(t, await app.inject({ method: 'GET', url: `/auth/Authenticate/${good}?callback=cb&format=xml` }), 400, badRequestBody('format must be json'), 'good name, bad format')
})

t.test('Authenticate never extends a token\'s life', async (t) => {
  const redis = testApp.redisStore?.redis
  const key = keyLayout(testApp.redisPrefix ?? '').tokenKey(hashToken(good))
  if (redis === undefined) throw new Error('the real app has Redis')
  const before = await redis.pttl(key)
  t.ok(before > 0, `the token's key has a PTTL (${before})`)
  await sleep(30)
  for (let i = 0; i < 5; i++) {
    const res = await app.inject({ method: 'GET', url: `/auth/Authenticate/${good}` })
    t.equal(res.statusCode, 200)
    const body = res.json<{ expiration_date?: string }>()
    if (body.expiration_date !== undefined) t.equal(body.expiration_date, login.expiration_date, 'expiration_date unchanged')
  }
  await app.inject({ method: 'GET', url: '/auth/Authenticate', cookies: cookie(good) })
  await app.inject({ method: 'GET', url: `/auth/Authenticate/${good}?callback=cb` })
  const after = await redis.pttl(key)
  t.ok(after <= before - 25, `PTTL did not grow: ${before} then ${after}`)
  const record = await testApp.tokens.find(hashToken(good))
  t.equal(record?.expiresAt, parseExpiration(login.expiration_date), 'the stored expiry is still the issued expiration_date')
})

t.test('a token authenticates until its expiration_date and not after', async (t) => {
  const short = await buildTestApp(t, 'real', { tokenTtlSeconds: 3 })
  await short.addUser('s', 'p')
  const { res } = await loginForm(short.app, 's', 'p')
  const body = res.json<LoginSuccess>()
  const expires = parseExpiration(body.expiration_date)
  t.ok(expires - Date.now() > 1500, 'about two seconds to go')
  t.equal((await short.app.inject({ method: 'GET', url: `/auth/Authenticate/${body.token}` })).statusCode, 200, 'active right after login')
  await sleep(expires - 800 - Date.now())
  t.equal((await short.app.inject({ method: 'GET', url: `/auth/Authenticate?token=${body.token}` })).statusCode, 200, 'active shortly before expiration_date')
  await sleep(expires + 300 - Date.now())
  assertStatus(t, await short.app.inject({ method: 'GET', url: `/auth/Authenticate/${body.token}` }), 403, BODIES.unauthorized, 'past expiration_date')
  assertStatus(t, await short.app.inject({ method: 'GET', url: '/auth/Authenticate', cookies: cookie(body.token) }), 403, BODIES.unauthorized, 'past expiration_date (cookie)')
  assertStatus(t, await short.app.inject({ method: 'POST', url: `/auth/Logout/${body.token}` }), 403, BODIES.unauthorized, 'Logout of the expired token')
})
