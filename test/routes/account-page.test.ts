import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { base32Decode, totpAt } from '../../src/totp/rfc6238.js'
import { buildTestApp } from '../support/app.js'
import { FORM, form } from './support.js'

/*
 * The account page (GET /auth/signin when signed in) and its forms, through inject as a browser
 * without JavaScript sends them: form bodies, 303 back to the page (Post/Redirect/Get) or a page
 * that shows a secret once. Each action: its happy path, a cross-site post refused, and, where it
 * asks for the password again, a wrong one refused and counted as Login counts it. In Chromium:
 * test/integration/gateways/browser-account.test.ts.
 */

const HOST = 'auth.example.org'
const OWN = `http://${HOST}`
const PASSWORD = 'correct horse battery staple'
const NEW_PASSWORD = 'a different long passphrase 2'
const SAME_ORIGIN = { host: HOST, origin: OWN, 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'navigate' }
const CROSS_SITE = { host: HOST, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' }
const STEP_MS = 30_000

interface Browser {
  /** The page as the browser sees it now. */
  page: () => Promise<{ status: number, body: string }>
  post: (path: string, fields?: Record<string, string>, headers?: Record<string, string>) => Promise<{ status: number, body: string, location: string | undefined, headers: Record<string, unknown> }>
  token: string
}

async function signIn (app: FastifyInstance, username = 'alice', password = PASSWORD, userAgent = 'Mozilla/5.0 (X11; Linux x86_64) Chrome/142.0 Safari/537.36'): Promise<Browser> {
  const res = await app.inject({ method: 'POST', url: '/auth/signin', headers: { ...FORM, ...SAME_ORIGIN, 'user-agent': userAgent }, payload: form({ username, password }) })
  const cookie = ([res.headers['set-cookie']].flat().find((line) => line?.startsWith('AuthToken1=')) ?? '')
  const token = /^AuthToken1=([^;]+)/.exec(cookie)?.[1] ?? ''
  if (token === '') throw new Error(`no sign-in for ${username}: ${res.statusCode}`)
  const headers = { host: HOST, cookie: `AuthToken1=${token}`, 'user-agent': userAgent }
  return {
    token,
    page: async () => {
      const page = await app.inject({ url: '/auth/signin', headers })
      return { status: page.statusCode, body: page.body }
    },
    post: async (path, fields = {}, extra = SAME_ORIGIN) => {
      const answer = await app.inject({ method: 'POST', url: path, headers: { ...FORM, ...extra, ...headers }, payload: form(fields) })
      return { status: answer.statusCode, body: answer.body, location: answer.headers.location, headers: answer.headers }
    }
  }
}

function assertStrictPage (t: Test, headers: Record<string, unknown>, what: string): void {
  const csp = String(headers['content-security-policy'])
  t.match(headers['content-type'], /^text\/html; charset=utf-8/, `${what}: HTML`)
  t.match(csp, /default-src 'none'/, `${what}: strict CSP`)
  t.notMatch(csp, /unsafe-inline|unsafe-eval/, `${what}: nothing inline`)
  t.equal(headers['cache-control'], 'no-store', `${what}: no-store`)
  t.equal(headers['x-frame-options'], 'DENY', `${what}: no framing`)
}

const alertOf = (body: string): string | undefined => /role="alert" id="notice">([^<]*)</.exec(body)?.[1]
const statusOf = (body: string): string | undefined => /role="status" id="notice">([^<]*)</.exec(body)?.[1]

/** Not within 3 s of a step's end: the codes made now stay in the steps they were made for. */
async function awayFromStepEnd (): Promise<void> {
  const into = Date.now() % STEP_MS
  if (into > STEP_MS - 3000) await new Promise((resolve) => setTimeout(resolve, STEP_MS - into + 100))
}

t.test('the account page: every section, labelled fields with their autocomplete values, nothing inline', async (t) => {
  const { app } = await buildTestApp(t, 'embedded', { signinTitle: 'Example Corp' })
  await app.accounts.add('alice', PASSWORD, false)
  const browser = await signIn(app)
  const res = await app.inject({ url: '/auth/signin', headers: { host: HOST, cookie: `AuthToken1=${browser.token}` } })
  t.equal(res.statusCode, 200)
  assertStrictPage(t, res.headers, 'account page')
  const body = res.body
  t.match(body, '<title>Your account</title>')
  t.match(body, '<span id="brand">Example Corp</span>', 'the name from AUTH_SIGNIN_TITLE')
  for (const heading of ['Sessions', 'Password', 'Two-step verification', 'Passkeys', 'API keys']) t.match(body, `>${heading}</h2>`, `a ${heading} section`)
  const fields: Array<[string, string, string]> = [
    ['current-password', 'current_password', 'current-password'],
    ['new-password', 'new_password', 'new-password'],
    ['confirm-password', 'confirm_password', 'new-password'],
    ['totp-begin-password', 'current_password', 'current-password'],
    ['key-name', 'name', 'off'],
    ['key-password', 'current_password', 'current-password']
  ]
  for (const [id, name, autocomplete] of fields) {
    t.match(body, new RegExp(`<label for="${id}">[^<]+</label>\\s*<input id="${id}" name="${name}" [^>]*autocomplete="${autocomplete}"`), `${id}: labelled, autocomplete ${autocomplete}`)
  }
  t.match(body, /<input id="key-days" name="expires_in_days" type="number" [^>]*min="1" max="365" value="90"/, 'days: a number field, the default and maximum')
  t.notMatch(body, /<script\b[^>]*>[^<]+<\/script>|\sstyle=|<style\b|\son[a-z]+=/i, 'no inline script, style or handler')
  t.match(body, '<link rel="icon" href="/auth/signin/assets/icon.svg" type="image/svg+xml">', 'an icon')
  t.match(body, /<form method="post" action="\/auth\/account\/totp" class="stack" id="totp-begin">/, 'two-step set-up is a plain form')

  const plain = await buildTestApp(t, 'embedded')
  const signInPage = await plain.app.inject({ url: '/auth/signin', headers: { host: `${HOST}:8443` } })
  t.match(signInPage.body, `<span id="brand">${HOST}</span>`, 'unset: the host name the browser asked for, without the port')
  for (const path of ['/favicon.ico', '/auth/signin/assets/icon.svg']) {
    const icon = await plain.app.inject({ url: path })
    t.equal(icon.statusCode, 200, `${path}: served`)
    t.equal(icon.headers['content-type'], 'image/svg+xml', `${path}: SVG`)
    t.match(icon.body, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/, `${path}: the icon`)
  }
})

t.test('sessions: end one, end all others; a cross-site post ends nothing', async (t) => {
  const { app } = await buildTestApp(t, 'embedded')
  await app.accounts.add('alice', PASSWORD, false)
  const here = await signIn(app)
  const phone = await signIn(app, 'alice', PASSWORD, 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) Version/18.0 Mobile/15E148 Safari/604.1')
  const laptop = await signIn(app, 'alice', PASSWORD, 'Mozilla/5.0 (Windows NT 10.0) Firefox/140.0')
  const page = (await here.page()).body
  const ids = [...page.matchAll(/action="\/auth\/account\/sessions\/([A-Za-z0-9_-]+)\/end"/g)].map((match) => match[1] ?? '')
  t.equal(ids.length, 2, 'an End button for each other session, none for this browser\'s')
  t.match(page, 'Sign out all 2 other sessions')
  const phoneSession = (await app.sessions.list((await app.auth.authenticate(phone.token)).accountId, '')).find((session) => session.userAgent.includes('iPhone'))?.id ?? ''
  t.ok(ids.includes(phoneSession), 'the phone\'s session is listed')

  const refused = await here.post(`/auth/account/sessions/${phoneSession}/end`, {}, CROSS_SITE)
  t.equal(refused.status, 403, 'cross-site: refused')
  t.match(alertOf(refused.body), 'did not come from this site', 'the account page says why')
  t.equal((await app.inject({ url: '/auth/Authenticate', headers: { authorization: `Bearer ${phone.token}` } })).statusCode, 200, 'the phone still signed in')

  const ended = await here.post(`/auth/account/sessions/${phoneSession}/end`)
  t.equal(ended.status, 303, 'no-JS form: 303')
  t.equal(ended.location, '/auth/signin?done=session-ended#sessions-section', 'back to the page (Post/Redirect/Get)')
  t.equal((await app.inject({ url: '/auth/Authenticate', headers: { authorization: `Bearer ${phone.token}` } })).statusCode, 403, 'the phone signed out')
  const after = await app.inject({ url: ended.location ?? '', headers: { host: HOST, cookie: `AuthToken1=${here.token}` } })
  t.equal(statusOf(after.body), 'The session was ended.', 'the page says so')
  const again = await here.post(`/auth/account/sessions/${phoneSession}/end`)
  t.equal(again.status, 403)
  t.equal(alertOf(again.body), 'That session had already ended.')

  const all = await here.post('/auth/account/sessions/end-others')
  t.equal(all.location, '/auth/signin?done=sessions-ended#sessions-section')
  t.equal((await app.inject({ url: '/auth/Authenticate', headers: { authorization: `Bearer ${laptop.token}` } })).statusCode, 403, 'the laptop signed out')
  t.equal((await app.inject({ url: '/auth/Authenticate', headers: { authorization: `Bearer ${here.token}` } })).statusCode, 200, 'this browser stays')
  t.notMatch((await here.page()).body, /sessions\/end-others/, 'nothing left to end')

  const signedOut = await app.inject({ method: 'POST', url: '/auth/account/sessions/end-others', headers: { ...FORM, ...SAME_ORIGIN }, payload: '' })
  t.equal(signedOut.statusCode, 303, 'not signed in: to the sign-in page')
  t.equal(signedOut.headers.location, '/auth/signin')
})

t.test('password: changed with the current one; a wrong one refused and counted; cross-site refused; federated told why', async (t) => {
  const { app } = await buildTestApp(t, 'embedded', { maxFailedLogins: 3 })
  await app.accounts.add('alice', PASSWORD, false)
  const here = await signIn(app)
  const other = await signIn(app)

  const cross = await here.post('/auth/account/password', { current_password: PASSWORD, new_password: NEW_PASSWORD, confirm_password: NEW_PASSWORD }, CROSS_SITE)
  t.equal(cross.status, 403, 'cross-site: refused')
  const wrong = await here.post('/auth/account/password', { current_password: 'not it', new_password: NEW_PASSWORD, confirm_password: NEW_PASSWORD })
  t.equal(wrong.status, 401, 'a wrong current password: 401, as Login')
  assertStrictPage(t, wrong.headers, 'refused page')
  t.equal(alertOf(wrong.body), 'That password is not right.')
  const differ = await here.post('/auth/account/password', { current_password: PASSWORD, new_password: NEW_PASSWORD, confirm_password: 'typo' })
  t.equal(differ.status, 400)
  t.equal(alertOf(differ.body), 'The two new passwords are not the same.')
  const short = await here.post('/auth/account/password', { current_password: PASSWORD, new_password: 'short', confirm_password: 'short' })
  t.equal(short.status, 400, 'the policy holds')
  t.equal(alertOf(short.body), 'The new password is shorter than 8 characters.', 'in words for a person')

  const changed = await here.post('/auth/account/password', { current_password: PASSWORD, new_password: NEW_PASSWORD, confirm_password: NEW_PASSWORD })
  t.equal(changed.status, 303)
  t.equal(changed.location, '/auth/signin?done=password-changed#password-section')
  t.equal((await app.inject({ url: '/auth/Authenticate', headers: { authorization: `Bearer ${other.token}` } })).statusCode, 403, 'the other session ended')
  t.equal((await here.page()).status, 200, 'this one stays')
  const login = await app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username: 'alice', password: NEW_PASSWORD }) })
  t.equal(login.statusCode, 200, 'the new password signs in')

  // A wrong current password counts as a failed Login: three, and the account is locked.
  for (let i = 0; i < 3; i++) await here.post('/auth/account/password', { current_password: 'not it', new_password: PASSWORD, confirm_password: PASSWORD })
  const locked = await here.post('/auth/account/password', { current_password: NEW_PASSWORD, new_password: PASSWORD, confirm_password: PASSWORD })
  t.equal(locked.status, 429, 'locked after 3 failures (Login counted them), even for the right password')
  t.match(alertOf(locked.body), /^Too many attempts\. Try again in/)
  t.ok(Number(locked.headers['retry-after']) > 0, 'Retry-After')

  await app.accounts.add('fed', PASSWORD, true)
  const fed = await signIn(app, 'fed')
  const fedPage = (await fed.page()).body
  t.match(fedPage, 'id="password-federated"', 'a federated account: no password form')
  t.match(fedPage, 'kept by your organisation\'s directory', 'and why')
  t.notMatch(fedPage, 'id="password-change"')
  const fedPost = await fed.post('/auth/account/password', { current_password: PASSWORD, new_password: NEW_PASSWORD, confirm_password: NEW_PASSWORD })
  t.equal(fedPost.status, 403, 'a crafted post: refused')
})

t.test('two-step verification: set up with the password (QR, key, recovery codes once), confirmed with a code, removed', async (t) => {
  const { app } = await buildTestApp(t, 'embedded', { maxFailedLogins: 5 })
  await app.accounts.add('alice', PASSWORD, false)
  const here = await signIn(app)

  const cross = await here.post('/auth/account/totp', { current_password: PASSWORD }, CROSS_SITE)
  t.equal(cross.status, 403, 'cross-site: refused')
  t.notMatch(cross.body, /totp-secret/, 'no secret')
  const wrong = await here.post('/auth/account/totp', { current_password: 'not it' })
  t.equal(wrong.status, 401, 'step-up refused')
  t.equal(alertOf(wrong.body), 'That password is not right.')
  t.notMatch(wrong.body, /totp-secret/, 'no secret')
  await app.backends.audit.flush()
  t.ok((await app.backends.audit.list({ username: 'alice', event: 'login.failure' })).length >= 1, 'counted as a failed Login')

  await awayFromStepEnd()
  const begun = await here.post('/auth/account/totp', { current_password: PASSWORD })
  t.equal(begun.status, 200)
  assertStrictPage(t, begun.headers, 'enrollment page')
  const secret = (/<input type="hidden" name="secret" value="([A-Z2-7]+)">/.exec(begun.body)?.[1]) ?? ''
  t.match(secret, /^[A-Z2-7]{32}$/, 'the key, base32')
  t.match(begun.body, /<code id="totp-secret" class="secret">([A-Z2-7]{4} ){7}[A-Z2-7]{4}<\/code>/, 'shown as text in groups of four')
  t.match(begun.body, /<svg class="qr" xmlns="http:\/\/www\.w3\.org\/2000\/svg" viewBox="0 0 (\d+) \1"[^>]* role="img" aria-label="[^"]+"/, 'a QR code, inline SVG, labelled')
  t.notMatch(begun.body, /https?:\/\/(?!www\.w3\.org\/2000\/svg)/, 'no external service')
  t.equal([...begun.body.matchAll(/<li><code>([A-Za-z0-9-]+)<\/code><\/li>/g)].length, 10, 'ten recovery codes')
  t.match(begun.body, 'They will not be shown again.')
  t.match(begun.body, /<label for="totp-code">[^<]+<\/label>\s*<input id="totp-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code"/, 'the code field')
  const key = base32Decode(secret) ?? Buffer.alloc(0)

  const miss = await here.post('/auth/account/totp/confirm', { secret, code: totpAt(key, Date.now()) === '000000' ? '111111' : '000000' })
  t.equal(miss.status, 400, 'a wrong code: the set-up page again')
  t.equal(alertOf(miss.body), 'That code is not right. Enter the code the app shows now.')
  t.match(miss.body, 'class="qr"', 'with the QR code again')
  t.notMatch(miss.body, /id="recovery-codes"/, 'not the recovery codes')
  t.equal(await app.secondFactor.isActive((await app.auth.authenticate(here.token)).accountId), false, 'not on yet')

  const crossConfirm = await here.post('/auth/account/totp/confirm', { secret, code: totpAt(key, Date.now() - STEP_MS) }, CROSS_SITE)
  t.equal(crossConfirm.status, 403, 'cross-site confirm: refused')
  const on = await here.post('/auth/account/totp/confirm', { secret, code: totpAt(key, Date.now() - STEP_MS) })
  t.equal(on.status, 303)
  t.equal(on.location, '/auth/signin?done=totp-on#totp-section')
  const page = (await here.page()).body
  t.match(page, /id="totp-state"><span class="badge on">On<\/span>/, 'the page says it is on')
  t.match(page, /<label for="totp-remove-code">[^<]+<\/label>\s*<input id="totp-remove-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code"/, 'removal asks for a code')
  const login = await app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username: 'alice', password: PASSWORD }) })
  t.equal(login.json().status, 702, 'Login now asks for the second factor')

  const wrongRemove = await here.post('/auth/account/totp/remove', { current_password: PASSWORD, code: '12345678' })
  t.equal(wrongRemove.status, 401, 'a wrong code: refused')
  t.equal(alertOf(wrongRemove.body), 'The password or the code is not right.')
  const crossRemove = await here.post('/auth/account/totp/remove', { current_password: PASSWORD, code: totpAt(key, Date.now()) }, CROSS_SITE)
  t.equal(crossRemove.status, 403, 'cross-site remove: refused')
  const off = await here.post('/auth/account/totp/remove', { current_password: PASSWORD, code: totpAt(key, Date.now()) })
  t.equal(off.status, 303)
  t.equal(off.location, '/auth/signin?done=totp-off#totp-section')
  t.equal(await app.secondFactor.isActive((await app.auth.authenticate(here.token)).accountId), false, 'off')
})

t.test('API keys: created with the password, the secret shown once; revoked; step-up and cross-site refused', async (t) => {
  const { app } = await buildTestApp(t, 'embedded', { apiKeyMaxDays: 30 })
  await app.accounts.add('alice', PASSWORD, false)
  const here = await signIn(app)

  const cross = await here.post('/auth/account/keys', { name: 'ci', expires_in_days: '7', current_password: PASSWORD }, CROSS_SITE)
  t.equal(cross.status, 403, 'cross-site: refused')
  t.notMatch(cross.body, /atsk_[A-Za-z0-9_-]{20}/)
  const wrong = await here.post('/auth/account/keys', { name: 'ci', expires_in_days: '7', current_password: 'not it' })
  t.equal(wrong.status, 401, 'step-up refused')
  t.equal(alertOf(wrong.body), 'That password is not right.')
  t.notMatch(wrong.body, /atsk_[A-Za-z0-9_-]{20}/)
  const tooLong = await here.post('/auth/account/keys', { name: 'ci', expires_in_days: '31', current_password: PASSWORD })
  t.equal(tooLong.status, 400, 'over AUTH_API_KEY_MAX_DAYS')
  t.equal(alertOf(tooLong.body), 'The number of days must be a whole number from 1 to 30.')
  const notNumber = await here.post('/auth/account/keys', { name: 'ci', expires_in_days: 'seven', current_password: PASSWORD })
  t.equal(notNumber.status, 400)
  t.match(alertOf(notNumber.body), /^The number of days must be a whole number/)
  t.equal((await app.apiKeys.page((await app.auth.authenticate(here.token)).accountId, undefined, 10)).keys.length, 0, 'no key made by any of these')

  const made = await here.post('/auth/account/keys', { name: 'backup <script>', expires_in_days: '7', current_password: PASSWORD })
  t.equal(made.status, 200, 'the key\'s page')
  assertStrictPage(t, made.headers, 'new key page')
  const secret = /<textarea id="key-secret" class="secret" rows="2" readonly[^>]*>(atsk_[A-Za-z0-9_-]+)<\/textarea>/.exec(made.body)?.[1] ?? ''
  t.match(secret, /^atsk_/, 'the secret on the page')
  t.match(made.body, 'it will not be shown again', 'with the warning')
  t.match(made.body, 'backup &#60;script&#62;', 'the name escaped')
  const check = await app.inject({ url: '/auth/Authenticate', headers: { authorization: `Bearer ${secret}` } })
  t.equal(check.json().kind, 'api_key', 'the key works')
  const expires = Date.parse(`${String(check.json().expiration_date)}Z`)
  t.ok(Math.abs(expires - (Date.now() + 7 * 86_400_000)) < 120_000, 'for the 7 days the form asked')
  const page = (await here.page()).body
  t.notMatch(page, secret, 'the account page never shows the secret')
  t.match(page, /<ul class="list" id="keys"><li><span class="what">backup &#60;script&#62;<\/span>/, 'the key listed')
  const id = /action="\/auth\/account\/keys\/([^/"]+)\/revoke"/.exec(page)?.[1] ?? ''

  const crossRevoke = await here.post(`/auth/account/keys/${id}/revoke`, {}, CROSS_SITE)
  t.equal(crossRevoke.status, 403, 'cross-site revoke: refused')
  t.equal((await app.inject({ url: '/auth/Authenticate', headers: { authorization: `Bearer ${secret}` } })).statusCode, 200, 'still works')
  const revoked = await here.post(`/auth/account/keys/${id}/revoke`)
  t.equal(revoked.status, 303)
  t.equal(revoked.location, '/auth/signin?done=key-revoked#keys-section')
  t.equal((await app.inject({ url: '/auth/Authenticate', headers: { authorization: `Bearer ${secret}` } })).statusCode, 403, 'the key ended')

  await app.accounts.add('bob', PASSWORD, false)
  const bob = await signIn(app, 'bob')
  const bobs = await bob.post('/auth/account/keys', { name: 'bob', expires_in_days: '7', current_password: PASSWORD })
  const bobSecret = />(atsk_[A-Za-z0-9_-]+)</.exec(bobs.body)?.[1] ?? ''
  const bobId = /action="\/auth\/account\/keys\/([^/"]+)\/revoke"/.exec((await bob.page()).body)?.[1] ?? ''
  const foreign = await here.post(`/auth/account/keys/${bobId}/revoke`)
  t.equal(foreign.status, 403, 'another account\'s key: refused')
  t.equal(alertOf(foreign.body), 'That key had already been revoked, or is not yours.')
  t.equal((await app.inject({ url: '/auth/Authenticate', headers: { authorization: `Bearer ${bobSecret}` } })).statusCode, 200, 'bob\'s key still works')
})

t.test('passkey removal answers 303 back to the page; other methods are refused', async (t) => {
  const { app } = await buildTestApp(t, 'embedded')
  await app.accounts.add('alice', PASSWORD, false)
  const here = await signIn(app)
  const removed = await here.post('/auth/passkeys/nope/delete')
  t.equal(removed.status, 303)
  t.equal(removed.location, '/auth/signin?done=passkey-removed#passkeys-section')
  const put = await app.inject({ method: 'PUT', url: '/auth/account/keys', headers: { host: HOST } })
  t.equal(put.statusCode, 405)
  const noticed = await app.inject({ url: '/auth/signin?done=<script>', headers: { host: HOST, cookie: `AuthToken1=${here.token}` } })
  t.equal(noticed.statusCode, 200)
  t.notMatch(noticed.body, /id="notice"/, 'an unknown done word says nothing (no text from the URL)')
})
