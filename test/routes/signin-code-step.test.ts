import t, { type Test } from 'tap'
import * as OTPAuth from 'otpauth'
import type { FastifyInstance } from 'fastify'
import { buildTestApp } from '../support/app.js'

/*
 * The sign-in page's code step (the second factor): the right password of an
 * enrolled account asks for the code with the account held server-side (never the password),
 * a wrong code is Login's counted failure, the right one (or a recovery code) signs in and goes
 * back; the pending sign-in is the browser's alone and ends with it.
 */

const HOST = 'auth.example.org'
const PASSWORD = 'a long enough passphrase 1'
const SAME_ORIGIN = { host: HOST, origin: `http://${HOST}`, 'sec-fetch-site': 'same-origin', 'content-type': 'application/x-www-form-urlencoded' }
const STEP_MS = 30_000

function cookieLine (setCookie: string | string[] | undefined, name: string): string | undefined {
  const all = setCookie === undefined ? [] : Array.isArray(setCookie) ? setCookie : [setCookie]
  return all.find((line) => line.startsWith(`${name}=`))
}

/** Enrolled as a person does it, confirmed with the code of the step before (Login may use now's). */
async function enroll (t: Test, app: FastifyInstance, username: string): Promise<{ code: (offset?: number) => string, recoveryCodes: string[], token: string }> {
  const into = Date.now() % STEP_MS
  if (into > STEP_MS - 4000) await new Promise((resolve) => setTimeout(resolve, STEP_MS - into + 100))
  const login = await app.inject({ method: 'POST', url: '/auth/Login', payload: { username, password: PASSWORD } })
  const token = login.json<{ token: string }>().token
  const begun = (await app.inject({ method: 'POST', url: '/auth/totp', headers: { authorization: `Bearer ${token}` }, payload: { current_password: PASSWORD } })).json<{ otpauth_uri: string, recovery_codes: string[] }>()
  const generator = OTPAuth.URI.parse(begun.otpauth_uri)
  if (!(generator instanceof OTPAuth.TOTP)) throw new Error('not a TOTP URI')
  const code = (offset = 0): string => generator.generate({ timestamp: Date.now() + offset * STEP_MS })
  const confirmed = await app.inject({ method: 'POST', url: '/auth/totp/confirm', headers: { authorization: `Bearer ${token}` }, payload: { code: code(-1) } })
  t.equal(confirmed.statusCode, 200, 'enrolled')
  return { code, recoveryCodes: begun.recovery_codes, token }
}

t.test('the code step: asked after the right password, the account held (not the password), the code signs in', async (t) => {
  const { app } = await buildTestApp(t, 'real', { redirectAllowed: ['app.example.org'], maxFailedLogins: 4 })
  await app.accounts.add('bob', PASSWORD, false)
  const enrolled = await enroll(t, app, 'bob')
  const signIn = async (fields: Record<string, string>) =>
    await app.inject({ method: 'POST', url: '/auth/signin', headers: SAME_ORIGIN, payload: new URLSearchParams(fields).toString() })
  const code = async (otp: string, pending: string | undefined, rd = 'https://app.example.org/after?x=1') =>
    await app.inject({ method: 'POST', url: '/auth/signin/code', headers: { ...SAME_ORIGIN, ...(pending === undefined ? {} : { cookie: `AuthPending1=${pending}` }) }, payload: new URLSearchParams({ otp, rd }).toString() })

  const step = await signIn({ username: 'bob', password: PASSWORD, rd: 'https://app.example.org/after?x=1' })
  t.equal(step.statusCode, 401, 'the password alone is not a sign-in')
  t.match(step.headers['content-type'], /^text\/html/)
  t.match(step.body, /<label for="otp">Code<\/label>\s*<input id="otp" name="otp" type="text" inputmode="numeric" autocomplete="one-time-code"/, 'a labelled one-time-code field')
  t.match(step.body, 'value="https://app.example.org/after?x=1"', 'the way back carried on')
  t.notMatch(step.body, PASSWORD, 'the password is nowhere in the page')
  t.notMatch(step.body, /name="password"/, 'not even as a hidden field')
  t.equal(cookieLine(step.headers['set-cookie'], 'AuthToken1'), undefined, 'no token yet')
  const pendingLine = cookieLine(step.headers['set-cookie'], 'AuthPending1') ?? ''
  t.match(pendingLine, /^AuthPending1=[A-Za-z0-9_-]{43}; Max-Age=300; Path=\/auth\/signin; HttpOnly; Secure; SameSite=Strict$/, 'a random id, five minutes, this path only')
  const pending = /^AuthPending1=([^;]+)/.exec(pendingLine)?.[1]

  t.equal((await code(enrolled.code(), undefined)).statusCode, 401, 'no pending cookie: nothing to finish')
  t.match((await code(enrolled.code(), 'forged-id')).body, 'Your sign-in took too long', 'an unknown id: start again')
  const wrong = await code(enrolled.code() === '000000' ? '000001' : '000000', pending)
  t.equal(wrong.statusCode, 401)
  t.match(wrong.body, 'That code is not right.', 'a wrong code: the code step again')
  t.equal(cookieLine(wrong.headers['set-cookie'], 'AuthToken1'), undefined, 'no token')

  const right = await code(enrolled.code(), pending)
  t.equal(right.statusCode, 303, 'the right code signs in')
  t.equal(right.headers.location, 'https://app.example.org/after?x=1', 'and goes back')
  t.match(cookieLine(right.headers['set-cookie'], 'AuthToken1'), /^AuthToken1=2[A-Za-z0-9_-]{45};/, 'the token cookie')
  t.match(cookieLine(right.headers['set-cookie'], 'AuthPending1'), /^AuthPending1=; Max-Age=0/, 'the pending cookie cleared')
  t.match((await code(enrolled.code(1), pending)).body, 'Your sign-in took too long', 'the pending sign-in is spent')

  const again = await signIn({ username: 'bob', password: PASSWORD })
  const second = /^AuthPending1=([^;]+)/.exec(cookieLine(again.headers['set-cookie'], 'AuthPending1') ?? '')?.[1]
  t.not(second, pending, 'each password step holds a new id')
  const recovery = await code(enrolled.recoveryCodes[0] ?? '', second, '')
  t.equal(recovery.statusCode, 303, 'a recovery code works in the same field')
  t.equal(recovery.headers.location, '/auth/signin', 'no rd: the signed-in page')

  const wrongPassword = await signIn({ username: 'bob', password: 'not it' })
  t.match(wrongPassword.body, 'The username or password is not right.', 'a wrong password never reaches the code step')
  t.equal(cookieLine(wrongPassword.headers['set-cookie'], 'AuthPending1'), undefined)

  await app.backends.audit.flush()
  const events = await app.backends.audit.list({ username: 'bob' })
  t.ok(events.some((event) => event.event === 'login.success' && event.outcome === 'issued-by-second-factor'), 'the code step is audited as a Login')
  t.ok(events.some((event) => event.event === 'login.failure' && event.outcome === 'wrong-second-factor'), 'and its wrong code as a failed one')
  t.ok(events.some((event) => event.event === 'login.refused' && event.outcome === 'second-factor-required'), 'the 702 as Login records it')
})

t.test('wrong codes count toward the lockout like wrong passwords', async (t) => {
  const { app } = await buildTestApp(t, 'real', { maxFailedLogins: 3 })
  await app.accounts.add('carol', PASSWORD, false)
  const enrolled = await enroll(t, app, 'carol')
  const step = await app.inject({ method: 'POST', url: '/auth/signin', headers: SAME_ORIGIN, payload: new URLSearchParams({ username: 'carol', password: PASSWORD }).toString() })
  const pending = /^AuthPending1=([^;]+)/.exec(cookieLine(step.headers['set-cookie'], 'AuthPending1') ?? '')?.[1] ?? ''
  const wrong = enrolled.code() === '000000' ? '000001' : '000000'
  const answers: number[] = []
  for (let i = 0; i < 4; i++) {
    answers.push((await app.inject({ method: 'POST', url: '/auth/signin/code', headers: { ...SAME_ORIGIN, cookie: `AuthPending1=${pending}` }, payload: `otp=${wrong}` })).statusCode)
  }
  t.same(answers.slice(0, 3), [401, 401, 401], 'wrong codes: 401 each')
  const locked = await app.inject({ method: 'POST', url: '/auth/signin/code', headers: { ...SAME_ORIGIN, cookie: `AuthPending1=${pending}` }, payload: `otp=${enrolled.code()}` })
  t.equal(locked.statusCode, 429, 'locked: even the right code is refused')
  t.match(locked.body, 'Too many attempts')
})

/*
 * A sign-in held at the code step is the account as it was when its password was right: a
 * password change (the person's own or an admin's), a revoke-all or a disable since ends it, as
 * they end the account's tokens. The right code then gives no token, and the person starts again.
 */
for (const kind of ['real', 'embedded'] as const) {
  t.test(`a pending sign-in ends with a password change, an admin reset, a revoke-all or a disable (${kind})`, async (t) => {
    const { app } = await buildTestApp(t, kind)
    const NEW_PASSWORD = 'another long passphrase 2'
    const events: Record<string, (username: string, token: string) => Promise<void>> = {
      'password change': async (username, token) => {
        const changed = await app.inject({ method: 'POST', url: '/auth/Password', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, payload: { current_password: PASSWORD, new_password: NEW_PASSWORD } })
        t.equal(changed.statusCode, 200, 'the password changed')
      },
      'admin reset': async (username) => { await app.accounts.setPassword(username, NEW_PASSWORD) },
      'revoke-all': async (username) => { await app.accounts.revokeSessions(username) },
      disable: async (username) => { await app.accounts.setDisabled(username, true) }
    }
    let n = 0
    for (const [what, happen] of Object.entries(events)) {
      const username = `pat${++n}`
      await app.accounts.add(username, PASSWORD, false)
      const enrolled = await enroll(t, app, username)
      const step = await app.inject({ method: 'POST', url: '/auth/signin', headers: SAME_ORIGIN, payload: new URLSearchParams({ username, password: PASSWORD }).toString() })
      const pending = /^AuthPending1=([^;]+)/.exec(cookieLine(step.headers['set-cookie'], 'AuthPending1') ?? '')?.[1] ?? ''
      t.not(pending, '', `${what}: at the code step`)
      await happen(username, enrolled.token)
      const late = await app.inject({ method: 'POST', url: '/auth/signin/code', headers: { ...SAME_ORIGIN, cookie: `AuthPending1=${pending}` }, payload: new URLSearchParams({ otp: enrolled.code() }).toString() })
      t.equal(cookieLine(late.headers['set-cookie'], 'AuthToken1'), undefined, `${what}: the right code gives no token`)
      t.equal(late.statusCode, 401, `${what}: 401`)
      t.match(late.body, 'Your sign-in took too long', `${what}: the sign-in page, to start again`)
      t.match(late.body, '<h1>Sign in</h1>', `${what}: not the code step`)
      t.match(cookieLine(late.headers['set-cookie'], 'AuthPending1'), /^AuthPending1=; Max-Age=0/, `${what}: the pending cookie cleared`)
    }
    await app.backends.audit.flush()
    const audited = await app.backends.audit.list({})
    t.equal(audited.filter((event) => event.event === 'login.refused' && event.outcome === 'sign-in-ended').length, 4, 'each audited as a refused Login')
    t.equal(audited.filter((event) => event.event === 'login.failure').length, 0, 'and not counted as a failure')
  })
}
