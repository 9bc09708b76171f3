import t from 'tap'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { buildTestApp } from '../support/app.js'
import { createSoftPasskey } from '../signin/soft-authenticator.js'

/*
 * Step-up for what outlives a token: a new API key, a second factor and a passkey each last
 * longer than the Login token that asks for them, and would survive its Logout, a password
 * change or an admin reset. A stolen token alone must buy none of them: each takes the
 * account's current password in the same request, checked as Login checks it (a wrong one is
 * a failed Login, counted toward the lockout).
 */

const HOST = 'auth.example.org'
const ORIGIN = `http://${HOST}`
const PASSWORD = 'a long enough passphrase 1'
const JSON_TYPE = { 'content-type': 'application/json' }
const BROWSER = { ...JSON_TYPE, host: HOST, origin: ORIGIN, 'sec-fetch-site': 'same-origin' }

type Ask = (token: string, extra: Record<string, string>) => Promise<LightMyRequestResponse>

/** The three routes that make something which outlives the token, as their callers send them. */
function routes (app: FastifyInstance): Record<'key' | 'totp' | 'passkey', Ask> {
  return {
    key: async (token, extra) => await app.inject({ method: 'POST', url: '/auth/keys', headers: { ...JSON_TYPE, authorization: `Bearer ${token}` }, payload: { name: 'ci', ...extra } }),
    totp: async (token, extra) => await app.inject({ method: 'POST', url: '/auth/totp', headers: { ...JSON_TYPE, authorization: `Bearer ${token}` }, payload: extra }),
    // The signed-in page's script asks with the browser's cookie.
    passkey: async (token, extra) => await app.inject({ method: 'POST', url: '/auth/passkeys/options', headers: { ...BROWSER, cookie: `AuthToken1=${token}` }, payload: extra })
  }
}

async function loginToken (app: FastifyInstance, username: string): Promise<string> {
  const login = await app.inject({ method: 'POST', url: '/auth/Login', headers: JSON_TYPE, payload: { username, password: PASSWORD } })
  return login.json<{ token: string }>().token
}

t.test('a token alone makes no key, no second factor, no passkey: 400 naming current_password', async (t) => {
  const { app } = await buildTestApp(t, 'embedded')
  await app.accounts.add('bob', PASSWORD, false)
  const token = await loginToken(app, 'bob')
  for (const [what, ask] of Object.entries(routes(app))) {
    const res = await ask(token, {})
    t.equal(res.statusCode, 400, `${what}: 400`)
    t.match(res.json(), { status: 400, message: 'Bad Request', detail: /current_password/ }, `${what}: the detail names current_password`)
  }
  const keys = await app.inject({ url: '/auth/keys', headers: { authorization: `Bearer ${token}` } })
  t.same(keys.json<{ keys: unknown[] }>().keys, [], 'no key was made')
  const confirm = await app.inject({ method: 'POST', url: '/auth/totp/confirm', headers: { ...JSON_TYPE, authorization: `Bearer ${token}` }, payload: { code: '000000' } })
  t.match(confirm.json(), { status: 400, detail: /no enrollment waits/ }, 'no enrollment was begun')
})

t.test('a wrong password: 701, counted as a failed Login, until the account locks', async (t) => {
  const { app } = await buildTestApp(t, 'embedded', { maxFailedLogins: 3 })
  await app.accounts.add('carol', PASSWORD, false)
  const token = await loginToken(app, 'carol')
  for (const [what, ask] of Object.entries(routes(app))) {
    const res = await ask(token, { current_password: 'not the password' })
    t.equal(res.statusCode, 401, `${what}: 401`)
    t.equal(res.body, '{"status":701,"message":"Login Failed"}', `${what}: Login Failed`)
  }
  // Three wrong step-ups were three failed Logins: the account is locked, the right password too.
  const locked = await app.inject({ method: 'POST', url: '/auth/Login', headers: JSON_TYPE, payload: { username: 'carol', password: PASSWORD } })
  t.equal(locked.statusCode, 429, 'Login is locked after AUTH_MAX_FAILED_LOGINS wrong step-ups')
  t.equal((await routes(app).key(token, { current_password: PASSWORD })).statusCode, 429, 'and so is a step-up with the right password')
  await app.backends.audit.flush()
  const failures = (await app.backends.audit.list({ username: 'carol' })).filter((event) => event.event === 'login.failure')
  t.equal(failures.length, 3, 'each wrong step-up audited as a failed Login')
})

t.test('the right password: a key, an enrollment, a passkey registered', async (t) => {
  const { app } = await buildTestApp(t, 'embedded')
  await app.accounts.add('dave', PASSWORD, false)
  const token = await loginToken(app, 'dave')
  const ask = routes(app)
  const key = await ask.key(token, { current_password: PASSWORD })
  t.equal(key.statusCode, 200, 'a key')
  t.match(key.json(), { status: 0, secret: /^atsk_/ })
  const totp = await ask.totp(token, { current_password: PASSWORD })
  t.equal(totp.statusCode, 200, 'an enrollment begun')
  t.match(totp.json(), { status: 0, otpauth_uri: /^otpauth:\/\/totp\// })
  const form = await app.inject({ method: 'POST', url: '/auth/totp', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Bearer ${token}` }, payload: new URLSearchParams({ current_password: PASSWORD }).toString() })
  t.equal(form.statusCode, 200, 'the password in a form body too')

  const options = await ask.passkey(token, { current_password: PASSWORD })
  t.equal(options.statusCode, 200, 'registration options')
  const passkey = createSoftPasskey()
  const answer = passkey.register(options.json<{ options: { challenge: string, rp: { id: string } } }>().options, ORIGIN)
  const registered = await app.inject({ method: 'POST', url: '/auth/passkeys', headers: { ...BROWSER, cookie: `AuthToken1=${token}` }, payload: { response: answer } })
  t.equal(registered.statusCode, 200, 'a passkey registered on the challenge the password opened')
})

t.test('a challenge is the account\'s whose password opened it', async (t) => {
  const { app } = await buildTestApp(t, 'embedded')
  await app.accounts.add('erin', PASSWORD, false)
  await app.accounts.add('frank', PASSWORD, false)
  const erin = await loginToken(app, 'erin')
  const frank = await loginToken(app, 'frank')
  const options = await routes(app).passkey(erin, { current_password: PASSWORD })
  const answer = createSoftPasskey().register(options.json<{ options: { challenge: string, rp: { id: string } } }>().options, ORIGIN)
  const stolen = await app.inject({ method: 'POST', url: '/auth/passkeys', headers: { ...BROWSER, cookie: `AuthToken1=${frank}` }, payload: { response: answer } })
  t.equal(stolen.statusCode, 400, 'another account\'s token cannot finish it')
  const page = await app.inject({ url: '/auth/signin', headers: { host: HOST, cookie: `AuthToken1=${frank}` } })
  t.match(page.body, 'id="no-passkeys"', 'frank has no passkey')
})

t.test('the signed-in page asks for the password to add a passkey', async (t) => {
  const { app } = await buildTestApp(t, 'embedded')
  await app.accounts.add('gina', PASSWORD, false)
  const token = await loginToken(app, 'gina')
  const page = await app.inject({ url: '/auth/signin', headers: { host: HOST, cookie: `AuthToken1=${token}` } })
  t.match(page.body, /<label for="passkey-password">[^<]+<\/label>\s*<input id="passkey-password" name="current_password" type="password" autocomplete="current-password" required>/, 'a labelled current-password field')
  t.notMatch(page.body, /<script>/, 'no inline script')
  t.match(page.headers['content-security-policy'], "script-src 'self'", 'the strict CSP still')
})
