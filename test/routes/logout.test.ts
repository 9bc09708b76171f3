import t, { type Test } from 'tap'
import { buildApp } from '../../src/app/app.js'
import { buildTestApp } from '../support/app.js'
import {
  allowed, assertClearedCookie, assertStatus, authenticate, BODIES, expiredToken, form, FORM, headerNames, setCookies,
  tokenFor, unauthorizedAnswers, unknownToken, type InjectOptions
} from './support.js'

/** POST /auth/Logout (contract): where the token comes from, termination everywhere, the cookie, races. */

const testApp = await buildTestApp(t, 'real')
const { app } = testApp
await testApp.addUser('alice', 'pw')
const fresh = async (): Promise<string> => await tokenFor(t, app, 'alice', 'pw')

async function assertEnded (t: Test, token: string, what: string): Promise<void> {
  assertStatus(t, await authenticate(app, token), 403, BODIES.unauthorized, `${what}: Authenticate then says 403`)
  assertStatus(t, await app.inject({ method: 'POST', url: `/auth/Logout/${token}` }), 403, BODIES.unauthorized, `${what}: a second Logout is 403`)
}

t.test('an active token is ended: by path, query or cookie', async (t) => {
  const ways: Array<[string, (token: string) => InjectOptions, boolean]> = [
    ['path', (token) => ({ method: 'POST', url: `/auth/Logout/${token}` }), false],
    ['path, trailing slash', (token) => ({ method: 'POST', url: `/auth/Logout/${token}/` }), false],
    ['query, no body', (token) => ({ method: 'POST', url: `/auth/Logout?token=${token}` }), false],
    ['query, trailing slash, no body', (token) => ({ method: 'POST', url: `/auth/Logout/?token=${token}` }), false],
    ['query with an empty form body', (token) => ({ method: 'POST', url: `/auth/Logout?token=${token}`, headers: FORM, payload: '' }), false],
    ['cookie, no body', (token) => ({ method: 'POST', url: '/auth/Logout', cookies: { AuthToken1: token } }), true],
    ['cookie, trailing slash, no body', (token) => ({ method: 'POST', url: '/auth/Logout/', cookies: { AuthToken1: token } }), true],
    ['cookie with an empty form body', (token) => ({ method: 'POST', url: '/auth/Logout', headers: FORM, payload: '', cookies: { AuthToken1: token } }), true]
  ]
  for (const [what, request, viaCookie] of ways) {
    const token = await fresh()
    const res = await app.inject(request(token))
    assertStatus(t, res, 200, BODIES.success, what)
    if (res.statusCode !== 200) continue
    if (viaCookie) assertClearedCookie(t, res, `${what}: clears the cookie`)
    else t.same(setCookies(res), [], `${what}: no cookie touched`)
    await assertEnded(t, token, what)
  }
})

t.test('other tokens of the same account stay active', async (t) => {
  const [one, two] = [await fresh(), await fresh()]
  assertStatus(t, await app.inject({ method: 'POST', url: `/auth/Logout/${one}` }), 200, BODIES.success, 'logout of one')
  t.equal((await authenticate(app, two)).statusCode, 200, 'the other is still active')
})

t.test('precedence: path, then query, then cookie', async (t) => {
  {
    const [inPath, inQuery, inCookie] = [await fresh(), await fresh(), await fresh()]
    const res = await app.inject({ method: 'POST', url: `/auth/Logout/${inPath}?token=${inQuery}`, cookies: { AuthToken1: inCookie } })
    assertStatus(t, res, 200, BODIES.success, 'path, query and cookie')
    t.equal((await authenticate(app, inPath)).statusCode, 403, 'the path token was ended')
    t.equal((await authenticate(app, inQuery)).statusCode, 200, 'the query token was not')
    t.equal((await authenticate(app, inCookie)).statusCode, 200, 'the cookie token was not')
  }
  {
    const [inQuery, inCookie] = [await fresh(), await fresh()]
    const res = await app.inject({ method: 'POST', url: `/auth/Logout?token=${inQuery}`, cookies: { AuthToken1: inCookie } })
    assertStatus(t, res, 200, BODIES.success, 'query and cookie')
    t.equal((await authenticate(app, inQuery)).statusCode, 403, 'the query token was ended')
    t.equal((await authenticate(app, inCookie)).statusCode, 200, 'the cookie token was not')
  }
  {
    const inCookie = await fresh()
    const res = await app.inject({ method: 'POST', url: `/auth/Logout/${unknownToken()}`, cookies: { AuthToken1: inCookie } })
    assertStatus(t, res, 403, BODIES.unauthorized, 'unknown path token, good cookie')
    t.equal((await authenticate(app, inCookie)).statusCode, 200, 'the cookie token was not ended')
  }
  {
    const inCookie = await fresh()
    const res = await app.inject({ method: 'POST', url: `/auth/Logout?token=${unknownToken()}`, headers: FORM, payload: '', cookies: { AuthToken1: inCookie } })
    assertStatus(t, res, 403, BODIES.unauthorized, 'unknown query token, good cookie')
    t.equal((await authenticate(app, inCookie)).statusCode, 200, 'the cookie token was not ended')
  }
})

t.test('terminated, expired, unknown, malformed or missing: byte-identical 403s', async (t) => {
  const terminated = await fresh()
  assertStatus(t, await app.inject({ method: 'POST', url: `/auth/Logout/${terminated}` }), 200, BODIES.success, 'first logout')
  const expired = await expiredToken(t, testApp, 'alice', 'pw')
  const cases: Array<[string, InjectOptions]> = [
    ['unknown (path)', { method: 'POST', url: `/auth/Logout/${unknownToken()}` }],
    ['missing, no body', { method: 'POST', url: '/auth/Logout' }],
    ['missing, empty form body', { method: 'POST', url: '/auth/Logout', headers: FORM, payload: '' }],
    ['missing, trailing slash, empty form body', { method: 'POST', url: '/auth/Logout/', headers: FORM, payload: '' }],
    ['terminated (path)', { method: 'POST', url: `/auth/Logout/${terminated}` }],
    ['terminated (cookie)', { method: 'POST', url: '/auth/Logout', headers: FORM, payload: '', cookies: { AuthToken1: terminated } }],
    ['expired (path)', { method: 'POST', url: `/auth/Logout/${expired}` }],
    ['unknown (query)', { method: 'POST', url: `/auth/Logout?token=${unknownToken()}`, headers: FORM, payload: '' }],
    ['malformed (path)', { method: 'POST', url: '/auth/Logout/abc' }],
    ['malformed (query)', { method: 'POST', url: `/auth/Logout?${form({ token: '*\r\n' })}`, headers: FORM, payload: '' }]
  ]
  const { first, answers } = await unauthorizedAnswers(t, app, cases)
  for (const [i, res] of answers.entries()) {
    const what = cases[i]?.[0] ?? ''
    t.equal(res.rawPayload.compare(first.rawPayload), 0, `${what}: same bytes as an unknown token's`)
    if (!what.includes('cookie')) t.same(headerNames(res), headerNames(first), `${what}: same header names`)
  }
})

t.test('50 concurrent Logouts of one token: exactly one succeeds', async (t) => {
  const token = await fresh()
  const answers = await Promise.all(Array.from({ length: 50 }, async (_, i) =>
    await app.inject(i % 2 === 0
      ? { method: 'POST', url: `/auth/Logout/${token}` }
      : { method: 'POST', url: '/auth/Logout', headers: FORM, payload: '', cookies: { AuthToken1: token } })))
  const successes = answers.filter((res) => res.statusCode === 200 && res.body === BODIES.success)
  const refusals = answers.filter((res) => res.statusCode === 403 && res.body === BODIES.unauthorized)
  t.equal(successes.length, 1, 'exactly one status 0')
  t.equal(refusals.length, 49, 'all the others 403')
  t.equal((await authenticate(app, token)).statusCode, 403, 'the token is ended')
})

t.test('the token is ended everywhere: another instance on the same stores refuses it at once', async (t) => {
  const other = await buildApp(testApp.config, { backends: app.backends, logger: { level: 'silent' } })
  t.teardown(async () => { await other.close() })
  const token = await fresh()
  t.equal((await authenticate(other, token)).statusCode, 200, 'the other instance knows the token')
  assertStatus(t, await app.inject({ method: 'POST', url: `/auth/Logout/${token}` }), 200, BODIES.success, 'logout on the first instance')
  assertStatus(t, await authenticate(other, token), 403, BODIES.unauthorized, 'the other instance refuses it')
  assertStatus(t, await other.inject({ method: 'POST', url: `/auth/Logout/${token}` }), 403, BODIES.unauthorized, 'and cannot log it out again')
})

t.test('only POST logs out: other methods are 405 with Allow: POST and end nothing', async (t) => {
  const token = await fresh()
  for (const method of ['GET', 'PUT', 'DELETE', 'PATCH'] as const) {
    for (const url of ['/auth/Logout', `/auth/Logout/${token}`, `/auth/Logout?token=${token}`]) {
      const res = await app.inject({ method, url, cookies: { AuthToken1: token } })
      assertStatus(t, res, 405, BODIES.methodNotAllowed, `${method} ${url.slice(0, 20)}`)
      t.same(allowed(res), ['POST'], `${method} ${url.slice(0, 20)}: Allow: POST`)
    }
  }
  t.equal((await authenticate(app, token)).statusCode, 200, 'the token is still active')
})
