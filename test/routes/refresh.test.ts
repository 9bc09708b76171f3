import t from 'tap'
import { keyLayout } from '@auth-token-service/protocol/layout'
import { hashToken } from '@auth-token-service/protocol/token'
import { buildTestApp } from '../support/app.js'
import {
  assertLoginSuccess, assertStatus, assertTokenCookie, authenticate, BODIES, expiredToken, form, FORM, JSON_HEADERS,
  parseExpiration, shortenLife, tokenFor, unknownToken, type InjectOptions
} from './support.js'

/**
 * Refresh (contract, POST /auth/Login): valid credentials plus an active token of the
 * same account give that same token, with its full lifetime again from now. Any other
 * presented token is ignored and a new one is issued; nothing is ever revived.
 */

const HALF_DAY = 43200
const DAY = 86400

const testApp = await buildTestApp(t, 'real')
const { app } = testApp
await Promise.all([testApp.addUser('alice', 'pw-a'), testApp.addUser('bob', 'pw-b'), testApp.addUser('fed', 'pw-f', true)])

const redis = testApp.redisStore?.redis
if (redis === undefined) throw new Error('the real app has Redis')
const pttl = async (token: string): Promise<number> => await redis.pttl(keyLayout(testApp.redisPrefix ?? '').tokenKey(hashToken(token)))
const storedExpiry = async (token: string): Promise<number | undefined> => (await testApp.tokens.find(hashToken(token)))?.expiresAt

async function loginWith (options: Omit<InjectOptions, 'method'>, username = 'alice', password = 'pw-a') {
  const before = Date.now()
  const res = await app.inject({
    method: 'POST',
    url: '/auth/Login',
    headers: FORM,
    payload: form({ username, password }),
    ...options
  })
  return { res, before, after: Date.now() }
}

t.test('an active token of the same account is returned with its lifetime reset', async (t) => {
  const ways: Array<[string, (token: string) => Omit<InjectOptions, 'method'>]> = [
    ['cookie AuthToken1', (token) => ({ cookies: { AuthToken1: token } })],
    ['token in the query', (token) => ({ url: `/auth/Login?token=${token}` })],
    ['token in the form body', (token) => ({ payload: form({ username: 'alice', password: 'pw-a', token }) })],
    ['token in a JSON body', (token) => ({ headers: JSON_HEADERS, payload: JSON.stringify({ username: 'alice', password: 'pw-a', token }) })],
    ['cookie with a legacy path login', (token) => ({ url: '/auth/Login/alice/pw-a', headers: {}, payload: undefined, cookies: { AuthToken1: token } })],
    ['token in the query of a legacy path login', (token) => ({ url: `/auth/Login/alice/pw-a?token=${token}`, headers: {}, payload: undefined })]
  ]
  for (const [what, presenting] of ways) {
    const token = await tokenFor(t, app, 'alice', 'pw-a')
    await shortenLife(testApp, token, 60_000)
    t.ok(await pttl(token) <= 60_000, `${what}: the token has a minute left`)
    const { res, before, after } = await loginWith(presenting(token))
    const body = assertLoginSuccess(t, res, HALF_DAY, before, after, what)
    t.equal(body.token, token, `${what}: the same token comes back`)
    assertTokenCookie(t, res, token, body.expiration_date, HALF_DAY, `${what}: cookie`)
    t.ok(await pttl(token) > (HALF_DAY - 5) * 1000, `${what}: the Redis key has its full 12 h again`)
    t.equal(await storedExpiry(token), parseExpiration(body.expiration_date), `${what}: the stored expiry is the new expiration_date`)
    t.equal((await authenticate(app, token)).statusCode, 200, `${what}: still active`)
  }
})

t.test('a refreshed federated token gets 24 h again', async (t) => {
  const token = await tokenFor(t, app, 'fed', 'pw-f')
  await shortenLife(testApp, token, 60_000)
  const { res, before, after } = await loginWith({ cookies: { AuthToken1: token } }, 'fed', 'pw-f')
  const body = assertLoginSuccess(t, res, DAY, before, after, 'federated refresh')
  t.equal(body.token, token, 'the same token')
})

t.test('any other presented token is ignored and a new token issued', async (t) => {
  const bobs = await tokenFor(t, app, 'bob', 'pw-b')
  await shortenLife(testApp, bobs, 60_000)
  const bobsExpiry = await storedExpiry(bobs)

  const expired = await expiredToken(t, testApp, 'alice', 'pw-a')
  const terminated = await tokenFor(t, app, 'alice', 'pw-a')
  t.equal((await app.inject({ method: 'POST', url: `/auth/Logout/${terminated}` })).statusCode, 200, 'logged out')
  const unknown = unknownToken()

  const cases: Array<[string, string]> = [
    ['another account\'s active token', bobs],
    ['an unknown token', unknown],
    ['an expired token', expired],
    ['a terminated token', terminated],
    ['a malformed token', 'not-a-token'],
    ['an empty token', '']
  ]
  for (const [what, presented] of cases) {
    for (const [how, options] of [
      ['cookie', { cookies: { AuthToken1: presented } }],
      ['token parameter', { url: `/auth/Login?${form({ token: presented })}` }]
    ] as const) {
      const label = `${what} (${how})`
      const { res, before, after } = await loginWith(options)
      const body = assertLoginSuccess(t, res, HALF_DAY, before, after, label)
      t.not(body.token, presented, `${label}: a new token`)
      assertTokenCookie(t, res, body.token, body.expiration_date, HALF_DAY, `${label}: the cookie carries the new token`)
      t.equal((await authenticate(app, body.token)).statusCode, 200, `${label}: the new token is active`)
    }
  }
  t.equal((await authenticate(app, bobs)).statusCode, 200, 'bob\'s token is untouched: still active')
  t.equal(await storedExpiry(bobs), bobsExpiry, 'bob\'s token kept its expiry')
  t.ok(await pttl(bobs) <= 60_000, 'bob\'s token was not extended')
  t.equal((await testApp.tokens.find(hashToken(bobs)))?.username, 'bob', 'bob\'s token still belongs to bob')
  for (const [what, token] of [['unknown', unknown], ['expired', expired], ['terminated', terminated]] as const) {
    assertStatus(t, await authenticate(app, token), 403, BODIES.unauthorized, `the ${what} token was not brought to life`)
  }
})

t.test('a failed login with an active token neither refreshes nor ends it', async (t) => {
  const token = await tokenFor(t, app, 'alice', 'pw-a')
  await shortenLife(testApp, token, 60_000)
  const expiry = await storedExpiry(token)
  const { res } = await loginWith({ cookies: { AuthToken1: token }, payload: form({ username: 'alice', password: 'wrong' }) })
  assertStatus(t, res, 401, BODIES.loginFailed, 'wrong password with a cookie')
  t.equal(res.headers['set-cookie'], undefined, 'no cookie is set')
  t.equal(await storedExpiry(token), expiry, 'the token kept its expiry')
  t.equal((await authenticate(app, token)).statusCode, 200, 'the token is still active')
})

t.test('a token ended by Logout while a refresh is attempted stays ended', async (t) => {
  for (let i = 0; i < 3; i++) {
    const token = await tokenFor(t, app, 'alice', 'pw-a')
    const [logout, refresh] = await Promise.all([
      app.inject({ method: 'POST', url: `/auth/Logout/${token}` }),
      loginWith({ cookies: { AuthToken1: token } })
    ])
    t.equal(logout.statusCode, 200, 'the logout succeeded')
    const issued = refresh.res.json<{ token: string }>().token
    if (issued === token) {
      // The refresh ran first; the logout then ended the refreshed token.
      t.pass('refresh ran before the logout')
    } else {
      t.not(issued, token, 'a new token')
    }
    assertStatus(t, await authenticate(app, token), 403, BODIES.unauthorized, 'the logged-out token is not active')
  }
})
