import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { buildTestApp, type BackendKind, type TestApp } from '../support/app.js'
import { assertStatus, authenticate, badRequestBody, BODIES, form, FORM, JSON_HEADERS, loginForm, statusBody, type LoginSuccess } from './support.js'

/*
 * POST /auth/Password (api-contract, "Password change"): the current password checked
 * as Login checks it, the new one by the policy, every other session ended and the caller's
 * kept. On Postgres+Redis and on the embedded default alike.
 */

const OLD = 'pw'
const NEW = 'a fresh and long passphrase 42'
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const CROSS_SITE = statusBody(403, 'Forbidden', 'cross-site request')
const FEDERATED = statusBody(403, 'Forbidden', 'the directory owns this account\'s password')

async function token (app: FastifyInstance, username: string, password: string): Promise<string> {
  const { res } = await loginForm(app, username, password)
  if (res.statusCode !== 200) throw new Error(`login of ${username} answered ${res.statusCode}`)
  return res.json<LoginSuccess>().token
}

async function change (app: FastifyInstance, caller: string, currentPassword: string, newPassword: string, headers: Record<string, string> = {}) {
  return await app.inject({
    method: 'POST',
    url: '/auth/Password',
    headers: { ...JSON_HEADERS, ...bearer(caller), ...headers },
    payload: JSON.stringify({ current_password: currentPassword, new_password: newPassword })
  })
}

for (const kind of ['real', 'embedded'] as BackendKind[]) {
  t.test(`${kind === 'real' ? 'Postgres and Redis' : 'embedded default'}`, async (t) => {
    const setup = async (t: Test, overrides = {}): Promise<TestApp> => {
      const testApp = await buildTestApp(t, kind, overrides)
      await testApp.addUser('ann', OLD)
      await testApp.addUser('bob', OLD)
      return testApp
    }

    t.test('success: every other session ends, the caller\'s stays and refreshes on the new epoch', async (t) => {
      const { app } = await setup(t)
      const caller = await token(app, 'ann', OLD)
      const others = [await token(app, 'ann', OLD), await token(app, 'ann', OLD)]
      const bobs = await token(app, 'bob', OLD)
      const res = await change(app, caller, OLD, NEW)
      t.equal(res.statusCode, 200)
      t.same(res.json(), { status: 0, message: 'Success', ended: 2 })
      t.equal((await authenticate(app, caller)).statusCode, 200, 'the caller\'s token works')
      for (const other of others) assertStatus(t, await authenticate(app, other), 403, BODIES.unauthorized, 'another session of the account ended')
      t.equal((await authenticate(app, bobs)).statusCode, 200, 'another account is untouched')
      assertStatus(t, (await loginForm(app, 'ann', OLD)).res, 401, BODIES.loginFailed, 'the old password no longer logs in')

      // The epoch went up with the password: the kept token must still refresh (its Login reads the new one).
      const refresh = await app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username: 'ann', password: NEW, token: caller }) })
      t.equal(refresh.statusCode, 200)
      t.equal(refresh.json<LoginSuccess>().token, caller, 'the kept token is refreshed, not replaced')
      t.equal((await authenticate(app, caller)).statusCode, 200)
      const listed = await app.inject({ method: 'GET', url: '/auth/sessions', headers: bearer(caller) })
      t.same(listed.json<{ sessions: Array<{ current: boolean }> }>().sessions.map((s) => s.current), [true], 'one session left: the caller\'s')

      await app.backends.audit.flush()
      t.match((await app.backends.audit.list({ username: 'ann' })).filter((e) => e.event === 'password.change'),
        [{ outcome: 'tokens-ended-2', clientIp: '127.0.0.1' }], 'audited, without a password')
      t.notMatch(JSON.stringify(await app.backends.audit.list({})), NEW, 'no password in the audit trail')
    })

    t.test('a form body, and the token from the cookie, work as well', async (t) => {
      const { app } = await setup(t)
      const caller = await token(app, 'ann', OLD)
      const res = await app.inject({ method: 'POST', url: '/auth/Password', headers: FORM, cookies: { AuthToken1: caller }, payload: form({ current_password: OLD, new_password: NEW }) })
      assertStatus(t, res, 200, JSON.stringify({ status: 0, message: 'Success', ended: 0 }), 'form body, cookie token')
      t.equal((await loginForm(app, 'ann', NEW)).res.statusCode, 200)
    })

    t.test('a wrong current password is a failed Login: 701, counted toward the same lockout', async (t) => {
      const { app } = await setup(t, { maxFailedLogins: 3 })
      const caller = await token(app, 'ann', OLD)
      const other = await token(app, 'ann', OLD)
      for (let i = 0; i < 3; i++) assertStatus(t, await change(app, caller, 'wrong', NEW), 401, BODIES.loginFailed, `wrong current password, ${i + 1}`)
      const locked = await change(app, caller, OLD, NEW)
      t.equal(locked.statusCode, 429, 'the account is locked: even the right current password waits')
      t.ok(Number(locked.headers['retry-after']) > 0, 'with Retry-After')
      t.equal((await loginForm(app, 'ann', OLD)).res.statusCode, 429, 'and Login is locked alike: the same counter')
      t.equal((await authenticate(app, other)).statusCode, 200, 'nothing ended')
      await app.backends.audit.flush()
      const events = await app.backends.audit.list({ username: 'ann' })
      t.equal(events.filter((e) => e.event === 'login.failure' && e.outcome === 'wrong-password').length, 3, 'each one audited as a failed Login')
      t.equal(events.filter((e) => e.event === 'login.lockout').length, 1, 'and the lockout')
    })

    t.test('a new password the policy refuses: 400 with detail; nothing changes', async (t) => {
      const testApp = await setup(t)
      const { app } = testApp
      // A name of four characters or more is looked for inside the password, not only matched whole.
      await testApp.addUser('carol', OLD)
      const caller = await token(app, 'carol', OLD)
      const other = await token(app, 'carol', OLD)
      const refusals: Array<[string, string]> = [
        ['short', 'new_password is shorter than 8 characters'],
        ['password123', 'new_password is on a list of common and breached passwords'],
        ['Carol-is-my-name-2026', 'new_password contains the username'],
        ['x'.repeat(1025), 'new_password is longer than 1024 bytes']
      ]
      for (const [password, detail] of refusals) assertStatus(t, await change(app, caller, OLD, password), 400, badRequestBody(detail), detail)
      t.equal((await loginForm(app, 'carol', OLD)).res.statusCode, 200, 'the old password still logs in')
      t.equal((await authenticate(app, other)).statusCode, 200, 'no session ended')
    })

    t.test('missing parameters and missing tokens', async (t) => {
      const { app } = await setup(t)
      const caller = await token(app, 'ann', OLD)
      const post = async (payload: Record<string, string>, headers: Record<string, string> = bearer(caller)) =>
        await app.inject({ method: 'POST', url: '/auth/Password', headers: { ...JSON_HEADERS, ...headers }, payload: JSON.stringify(payload) })
      assertStatus(t, await post({ new_password: NEW }), 400, badRequestBody('current_password is required'), 'no current_password')
      assertStatus(t, await post({ current_password: OLD }), 400, badRequestBody('new_password is required'), 'no new_password')
      assertStatus(t, await post({ current_password: OLD, new_password: NEW }, {}), 403, BODIES.unauthorized, 'no token')
      assertStatus(t, await post({ current_password: OLD, new_password: NEW }, bearer('A'.repeat(43))), 403, BODIES.unauthorized, 'an unknown token')
      const query = await app.inject({ method: 'POST', url: `/auth/Password?current_password=${OLD}&new_password=x`, headers: bearer(caller) })
      assertStatus(t, query, 400, badRequestBody('current_password is required'), 'passwords in the query string are not read')
      const get = await app.inject({ method: 'GET', url: '/auth/Password', headers: bearer(caller) })
      t.equal(get.statusCode, 405)
      t.equal(get.headers.allow, 'POST')
    })

    t.test('a federated account: 403, the directory owns its password', async (t) => {
      const testApp = await setup(t)
      await testApp.addUser('fed', OLD, true)
      const caller = await token(testApp.app, 'fed', OLD)
      assertStatus(t, await change(testApp.app, caller, OLD, NEW), 403, FEDERATED, 'federated')
      t.equal((await loginForm(testApp.app, 'fed', OLD)).res.statusCode, 200, 'unchanged')
    })

    t.test('CSRF: a cross-site request changes nothing', async (t) => {
      const { app } = await setup(t)
      const caller = await token(app, 'ann', OLD)
      const res = await change(app, caller, OLD, NEW, { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' })
      assertStatus(t, res, 403, CROSS_SITE, 'cross-site')
      t.equal((await loginForm(app, 'ann', OLD)).res.statusCode, 200, 'the password is unchanged')
    })
  })
}
