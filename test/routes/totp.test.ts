import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import * as OTPAuth from 'otpauth'
import type { FastifyInstance } from 'fastify'
import { buildInternalApp } from '../../src/app/internal-listener.js'
import { buildTestApp, fixtureAccounts, type BackendKind } from '../support/app.js'

/*
 * The second factor at Login (api-contract "Second factor"): enrollment with an
 * authenticator-compatible generator (otpauth, not our code), the Login matrix on every pathway,
 * the lockout counting codes, removal, the admin reset, and the audit trail.
 */

const PASSWORD = 'a long enough passphrase 1'
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
const JSON_TYPE = { 'content-type': 'application/json' }
const STEP_MS = 30_000
const ADMIN_KEY = 'admin-key-for-tests-0123456789-abcdefghij'

type Pathway = 'query' | 'form' | 'json'
const PATHWAYS: readonly Pathway[] = ['query', 'form', 'json']

interface Answer { status: number, body: Record<string, unknown> }

async function login (app: FastifyInstance, pathway: Pathway, params: Record<string, string>): Promise<Answer> {
  const query = new URLSearchParams(params).toString()
  const res = pathway === 'query'
    ? await app.inject({ method: 'POST', url: `/auth/Login?${query}` })
    : pathway === 'form'
      ? await app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: query })
      : await app.inject({ method: 'POST', url: '/auth/Login', headers: JSON_TYPE, payload: JSON.stringify(params) })
  return { status: res.statusCode, body: res.json() }
}

/** Not within 3 s of a step's end: a sequence of codes made now stays in the steps it was made for. */
async function awayFromStepEnd (): Promise<void> {
  const into = Date.now() % STEP_MS
  if (into > STEP_MS - 3000) await new Promise((resolve) => setTimeout(resolve, STEP_MS - into + 100))
}

interface Enrolled {
  generator: OTPAuth.TOTP
  recoveryCodes: string[]
  token: string
  /** The code the enrollment was confirmed with (its step is taken). */
  confirmation: string
  /** The code of the step `offset` steps from now. */
  code (offset?: number): string
}

/** As a person does it: log in, begin, put the URI into the app (otpauth here), confirm with its code of the step before. */
async function enroll (t: Test, app: FastifyInstance, username: string): Promise<Enrolled> {
  await awayFromStepEnd()
  const first = await login(app, 'form', { username, password: PASSWORD })
  t.equal(first.status, 200, `${username} logs in with the password alone before enrolling`)
  const token = String(first.body.token)
  const begun = await app.inject({ method: 'POST', url: '/auth/totp', headers: { authorization: `Bearer ${token}` }, payload: { current_password: PASSWORD } })
  t.equal(begun.statusCode, 200, 'enrollment begins')
  const enrollment = begun.json<{ secret: string, otpauth_uri: string, recovery_codes: string[] }>()
  t.match(enrollment.otpauth_uri, /^otpauth:\/\/totp\/auth-token-service:/)
  t.equal(enrollment.recovery_codes.length, 10, 'ten recovery codes')
  const generator = OTPAuth.URI.parse(enrollment.otpauth_uri)
  if (!(generator instanceof OTPAuth.TOTP)) throw new Error('not a TOTP URI')
  t.equal(generator.secret.base32.replace(/=+$/, ''), enrollment.secret, 'the URI carries the secret shown')
  const code = (offset = 0): string => generator.generate({ timestamp: Date.now() + offset * STEP_MS })
  t.equal((await login(app, 'form', { username, password: PASSWORD })).status, 200, 'not active before confirmation: the password alone still works')
  const wrong = await app.inject({ method: 'POST', url: '/auth/totp/confirm', headers: { authorization: `Bearer ${token}`, ...JSON_TYPE }, payload: JSON.stringify({ code: code(-3) }) })
  t.equal(wrong.statusCode, 400, 'a code three steps old does not confirm')
  // The step before now: Login may then use the code of now.
  const confirmation = code(-1)
  const confirmed = await app.inject({ method: 'POST', url: '/auth/totp/confirm', headers: { authorization: `Bearer ${token}`, ...JSON_TYPE }, payload: JSON.stringify({ code: confirmation }) })
  t.equal(confirmed.statusCode, 200, 'confirmed with a code of the app')
  return { generator, recoveryCodes: enrollment.recovery_codes, token, code, confirmation }
}

/** A six-digit code that is none of the three the window accepts. */
function wrongCode (enrolled: Enrolled): string {
  const accepted = new Set([enrolled.code(-1), enrolled.code(0), enrolled.code(1)])
  for (let n = 0; ; n++) {
    const candidate = String(n).padStart(6, '0')
    if (!accepted.has(candidate)) return candidate
  }
}

async function appWith (t: Test, kind: BackendKind, overrides = {}) {
  return await buildTestApp(t, kind, { totpKey: randomBytes(32), maxFailedLogins: 50, maxFailedLoginsPerIp: 1000, ...overrides })
}

for (const kind of ['embedded', 'real'] as const) {
  t.test(`Login matrix (${kind}): pathway × enrolled or not × code right, wrong, reused, expired, missing, recovery`, async (t) => {
    const { app } = await appWith(t, kind)
    for (const pathway of PATHWAYS) {
      const plain = `plain-${pathway}`
      const enrolledName = `enrolled-${pathway}`
      await fixtureAccounts(app).add(plain, PASSWORD, false)
      await fixtureAccounts(app).add(enrolledName, PASSWORD, false)

      // Not enrolled: the seed's Login, whatever otp says.
      t.equal((await login(app, pathway, { username: plain, password: PASSWORD })).status, 200, `${pathway}: not enrolled, no otp: Success`)
      t.equal((await login(app, pathway, { username: plain, password: PASSWORD, otp: '123456' })).status, 200, `${pathway}: not enrolled, an otp is ignored`)
      t.same((await login(app, pathway, { username: plain, password: 'wrong' })).body, { status: 701, message: 'Login Failed' }, `${pathway}: not enrolled, wrong password: 701`)

      const enrolled = await enroll(t, app, enrolledName)
      await awayFromStepEnd()
      const missing = await login(app, pathway, { username: enrolledName, password: PASSWORD })
      t.equal(missing.status, 401, `${pathway}: right password, no otp: HTTP 401`)
      t.same(missing.body, { status: 702, message: 'Second Factor Required' }, `${pathway}: ... with status 702`)
      t.same((await login(app, pathway, { username: enrolledName, password: 'wrong', otp: enrolled.code() })).body, { status: 701, message: 'Login Failed' },
        `${pathway}: wrong password with a right code: 701`)
      t.same((await login(app, pathway, { username: enrolledName, password: PASSWORD, otp: wrongCode(enrolled) })).body, { status: 701, message: 'Login Failed' },
        `${pathway}: wrong code: 701`)
      t.same((await login(app, pathway, { username: enrolledName, password: PASSWORD, otp: enrolled.code(-2) })).body, { status: 701, message: 'Login Failed' },
        `${pathway}: expired code (two steps old): 701`)
      // The codes a check uses are made once: a step ending between two Logins (a loaded machine) changes what code(-1) or code() gives, not these.
      t.same((await login(app, pathway, { username: enrolledName, password: PASSWORD, otp: enrolled.confirmation })).body, { status: 701, message: 'Login Failed' },
        `${pathway}: the confirmation's code again: 701`)
      const current = enrolled.code()
      const right = await login(app, pathway, { username: enrolledName, password: PASSWORD, otp: current })
      t.equal(right.status, 200, `${pathway}: right code: Success`)
      t.match(right.body, { status: 0, message: 'Success', token: String })
      const authenticated = await app.inject({ method: 'GET', url: `/auth/Authenticate?token=${String(right.body.token)}` })
      t.equal(authenticated.statusCode, 200, `${pathway}: the token it got works`)
      t.same((await login(app, pathway, { username: enrolledName, password: PASSWORD, otp: current })).body, { status: 701, message: 'Login Failed' },
        `${pathway}: the same code again (replay): 701`)
      const recovery = enrolled.recoveryCodes[0] ?? ''
      t.equal((await login(app, pathway, { username: enrolledName, password: PASSWORD, otp: recovery.toLowerCase() })).status, 200, `${pathway}: a recovery code (typed in lower case): Success`)
      t.same((await login(app, pathway, { username: enrolledName, password: PASSWORD, otp: recovery })).body, { status: 701, message: 'Login Failed' },
        `${pathway}: the recovery code again: 701`)
      t.equal((await login(app, pathway, { username: enrolledName, password: PASSWORD, otp: enrolled.code(1) })).status, 200, `${pathway}: the next step's code (drift): Success`)
    }

    // Path style carries no code: an enrolled account gets 702 there, others log in as ever.
    const path = await app.inject({ method: 'POST', url: `/auth/Login/enrolled-form/${encodeURIComponent(PASSWORD)}` })
    t.equal(path.statusCode, 401)
    t.same(path.json(), { status: 702, message: 'Second Factor Required' }, 'path style, enrolled: 702')
    t.equal((await app.inject({ method: 'POST', url: `/auth/Login/plain-form/${encodeURIComponent(PASSWORD)}` })).statusCode, 200, 'path style, not enrolled: Success')
  })
}

t.test("Login of an account without a second factor reads nothing of totp_factors beyond the account's own read", async (t) => {
  const { app, database } = await appWith(t, 'real')
  await fixtureAccounts(app).add('plain', PASSWORD, false)
  await fixtureAccounts(app).add('enrolled', PASSWORD, false)
  const enrolled = await enroll(t, app, 'enrolled')
  const statements: string[] = []
  const query = database.query.bind(database)
  database.query = async <Row extends object>(sql: string, params?: readonly unknown[]) => {
    statements.push(sql)
    return await query<Row>(sql, params)
  }
  const factorReads = (): number => statements.filter((sql) => /FROM totp_factors WHERE account_id = \$1/.test(sql)).length
  t.equal((await login(app, 'form', { username: 'plain', password: PASSWORD })).status, 200)
  t.ok(statements.some((sql) => /FROM users WHERE username/.test(sql)), 'the account was read (the count sees the app\'s statements)')
  t.equal(factorReads(), 0, 'no second read for an account without a factor')
  await awayFromStepEnd()
  t.equal((await login(app, 'form', { username: 'enrolled', password: PASSWORD, otp: enrolled.code() })).status, 200)
  t.equal(factorReads(), 1, 'one for an account with one')
})

t.test('wrong codes count toward the lockout; a right password without a code does not reset the count', async (t) => {
  const { app } = await appWith(t, 'embedded', { maxFailedLogins: 3 })
  await fixtureAccounts(app).add('carol', PASSWORD, false)
  const enrolled = await enroll(t, app, 'carol')
  await awayFromStepEnd()
  const wrong = wrongCode(enrolled)
  t.equal((await login(app, 'form', { username: 'carol', password: PASSWORD, otp: wrong })).body.status, 701)
  t.equal((await login(app, 'form', { username: 'carol', password: PASSWORD, otp: wrong })).body.status, 701)
  t.equal((await login(app, 'form', { username: 'carol', password: PASSWORD })).body.status, 702, 'no code: 702, nothing reset')
  t.match(await app.metrics.exposition(), /auth_logins_total\{outcome="second_factor_required"\} 1\b/, 'counted as second_factor_required in auth_logins_total')
  t.equal((await login(app, 'form', { username: 'carol', password: PASSWORD, otp: wrong })).body.status, 701, 'the third failure locks')
  const locked = await login(app, 'form', { username: 'carol', password: PASSWORD, otp: enrolled.code() })
  t.equal(locked.status, 429, 'locked: even the right password and code wait')
  t.equal(locked.body.status, 429)
})

t.test('removal with password and code; the admin reset through the admin API and the user view', async (t) => {
  const { app, config } = await appWith(t, 'embedded', { adminKey: ADMIN_KEY })
  await fixtureAccounts(app).add('dave', PASSWORD, false)
  await fixtureAccounts(app).add('erin', PASSWORD, false)
  const dave = await enroll(t, app, 'dave')
  await awayFromStepEnd()
  const remove = async (body: Record<string, string>) => await app.inject({ method: 'DELETE', url: '/auth/totp', headers: { authorization: `Bearer ${dave.token}`, ...JSON_TYPE }, payload: JSON.stringify(body) })
  t.equal((await remove({ current_password: 'wrong', code: dave.code() })).json().status, 701, 'wrong password: 701')
  t.equal((await remove({ current_password: PASSWORD, code: wrongCode(dave) })).json().status, 701, 'wrong code: 701')
  t.equal((await remove({ current_password: PASSWORD })).statusCode, 400, 'no code: 400')
  t.equal((await remove({ current_password: PASSWORD, code: dave.code() })).json().status, 0, 'password and code: removed')
  t.equal((await login(app, 'form', { username: 'dave', password: PASSWORD })).status, 200, 'the password alone logs in again')

  const erin = await enroll(t, app, 'erin')
  const again = await app.inject({ method: 'POST', url: '/auth/totp', headers: { authorization: `Bearer ${erin.token}` }, payload: { current_password: PASSWORD } })
  t.equal(again.statusCode, 409, 'a second enrollment while active: 409')
  await app.ready()
  const internal = await buildInternalApp(app, config)
  t.teardown(async () => { await internal.close() })
  const admin = async (method: 'GET' | 'DELETE', url: string) => await internal.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_KEY}` } })
  t.equal((await admin('GET', '/admin/users/erin')).json().user.totp, true, 'the user view shows totp: true')
  t.equal((await admin('GET', '/admin/users/dave')).json().user.totp, false, 'and false once removed')
  const reset = await admin('DELETE', '/admin/users/erin/totp')
  t.equal(reset.statusCode, 200)
  t.equal(reset.json().user.totp, false, 'the reset answers the view without it')
  t.equal((await admin('DELETE', '/admin/users/nobody/totp')).statusCode, 404, 'an unknown account: 404')
  t.equal((await login(app, 'form', { username: 'erin', password: PASSWORD })).status, 200, 'after the reset the password alone logs in')

  await app.backends.audit.flush()
  const events = await app.backends.audit.list({})
  const names = events.map((event) => `${event.event}:${event.username ?? ''}:${event.outcome}`)
  for (const expected of ['totp.enrolled:dave:pending', 'totp.enabled:dave:confirmed', 'totp.disabled:dave:removed', 'totp.disabled:erin:reset']) {
    t.ok(names.includes(expected), `audit: ${expected}`)
  }
  t.ok(events.some((event) => event.event === 'login.failure' && event.outcome === 'wrong-code'), 'a wrong code is a login.failure with outcome wrong-code')
  const reset2 = events.find((event) => event.event === 'totp.disabled' && event.outcome === 'reset')
  t.match(reset2?.credential, /^key:[0-9a-f]{8}$/, 'the reset names the admin credential')
  const everything = JSON.stringify(events)
  t.notOk(everything.includes(dave.generator.secret.base32.replace(/=+$/, '')), 'no secret in the audit trail')
})

t.test('recovery codes: each once, audited with the count left', async (t) => {
  const { app } = await appWith(t, 'embedded')
  await fixtureAccounts(app).add('frank', PASSWORD, false)
  const frank = await enroll(t, app, 'frank')
  for (const [index, code] of frank.recoveryCodes.slice(0, 3).entries()) {
    t.equal((await login(app, 'json', { username: 'frank', password: PASSWORD, otp: code })).status, 200, `recovery code ${index + 1}`)
  }
  t.equal((await login(app, 'json', { username: 'frank', password: PASSWORD, otp: 'AAAA-AAAA-AAAA-AAAA' })).body.status, 701, 'a made-up recovery code: 701')
  await app.backends.audit.flush()
  const used = (await app.backends.audit.list({ event: 'totp.recovery_used' })).map((event) => event.outcome)
  t.same(used, ['remaining-9', 'remaining-8', 'remaining-7'])
})
