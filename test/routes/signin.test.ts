import t, { type Test } from 'tap'
import { buildTestApp } from '../support/app.js'
import { FORM, form } from './support.js'

/*
 * The browser sign-in through inject: the pages, their headers, a sign-in that goes
 * back where the person was going (or to the signed-in page), failures as pages with a message
 * and no cookie, sign-out, and the passkey endpoints' refusals. In Chromium through real
 * gateways: test/integration/gateways/browser-sign-in.test.ts.
 */

const HOST = 'auth.example.org'
const OWN = `http://${HOST}`
const PASSWORD = 'correct horse battery staple'
const SAME_ORIGIN = { host: HOST, origin: OWN, 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'navigate' }

function tokenCookieOf (setCookie: string | string[] | undefined): string | undefined {
  const all = setCookie === undefined ? [] : Array.isArray(setCookie) ? setCookie : [setCookie]
  return all.find((line) => line.startsWith('AuthToken1='))
}

function assertPageHeaders (t: Test, headers: Record<string, unknown>, what: string): void {
  const csp = String(headers['content-security-policy'])
  t.match(headers['content-type'], /^text\/html; charset=utf-8/, `${what}: HTML`)
  t.match(csp, /(^|; )script-src 'self'(;|$)/, `${what}: scripts from this origin only`)
  t.match(csp, /frame-ancestors 'none'/, `${what}: frame-ancestors 'none'`)
  t.match(csp, /default-src 'none'/, `${what}: nothing else by default`)
  t.notMatch(csp, /unsafe-inline|unsafe-eval/, `${what}: no inline script or style`)
  t.equal(headers['x-frame-options'], 'DENY', `${what}: X-Frame-Options`)
  t.equal(headers['cache-control'], 'no-store', `${what}: no-store`)
  t.equal(headers['x-content-type-options'], 'nosniff', `${what}: nosniff`)
}

/** No inline script, no inline style, no event-handler attribute: what the CSP would block anyway. */
function assertNoInline (t: Test, body: string, what: string): void {
  const scripts = body.match(/<script\b[^>]*>/g) ?? []
  t.ok(scripts.every((tag) => /\bsrc="\/auth\/signin\/assets\/[a-z]+\.js"/.test(tag)), `${what}: every script is a file of this origin`)
  t.notMatch(body, /<script\b[^>]*>[^<]+<\/script>/, `${what}: no script body`)
  t.notMatch(body, /\sstyle=|<style\b/i, `${what}: no inline style`)
  t.notMatch(body, /\son[a-z]+=/i, `${what}: no event-handler attributes`)
}

t.test('the sign-in page: labelled fields, autocomplete, strict headers, rd kept only when allowed', async (t) => {
  const { app } = await buildTestApp(t, 'embedded', { redirectAllowed: ['app.example.org'] })
  const res = await app.inject({ url: '/auth/signin?rd=https://app.example.org/orders?page=2&sort=asc', headers: { host: HOST } })
  t.equal(res.statusCode, 200)
  assertPageHeaders(t, res.headers, 'sign-in page')
  assertNoInline(t, res.body, 'sign-in page')
  t.match(res.body, /<label for="username">Username<\/label>\s*<input id="username" name="username" type="text" autocomplete="username"/)
  t.match(res.body, /<label for="password">Password<\/label>\s*<input id="password" name="password" type="password" autocomplete="current-password"/)
  t.match(res.body, /<form method="post" action="\/auth\/signin"/, 'posts to this origin')
  t.match(res.body, '<input type="hidden" name="rd" value="https://app.example.org/orders?page=2&#38;sort=asc">', 'the allowed rd, whole query kept, escaped')
  t.match(res.body, /<div class="passkey" id="passkey-signin" hidden>/, 'the passkey button is hidden until the script shows it')
  for (const rd of ['//evil.example/x', 'https://evil.example/', 'javascript:alert(1)', 'https://app.example.org@evil.example/']) {
    const other = await app.inject({ url: `/auth/signin?rd=${encodeURIComponent(rd)}`, headers: { host: HOST } })
    t.notMatch(other.body, /name="rd"/, `${rd}: not carried`)
    t.notMatch(other.body, /evil/, `${rd}: not echoed`)
  }
  const xss = await app.inject({ url: `/auth/signin?rd=${encodeURIComponent('/"><script>alert(1)</script>')}`, headers: { host: HOST } })
  t.notMatch(xss.body, /<script>alert/, 'an rd path is escaped')
  for (const [path, type] of [['signin.css', 'text/css'], ['signin.js', 'text/javascript'], ['webauthn.js', 'text/javascript']]) {
    const asset = await app.inject({ url: `/auth/signin/assets/${path}` })
    t.equal(asset.statusCode, 200, `${path} served`)
    t.match(asset.headers['content-type'], type, `${path}: ${type}`)
  }
  t.match((await app.inject({ url: '/auth/signin/assets/webauthn.js' })).body, 'SimpleWebAuthnBrowser', 'the library\'s browser bundle')
  t.equal((await app.inject({ method: 'PUT', url: '/auth/signin' })).statusCode, 405)
})

t.test('sign in: 303 to an allowed rd with the cookie; else the signed-in page; failures are pages with no cookie', async (t) => {
  const { app } = await buildTestApp(t, 'embedded', { redirectAllowed: ['.example.org'], maxFailedLogins: 3 })
  await app.accounts.add('alice', PASSWORD, false)
  const post = async (fields: Record<string, string>, headers: Record<string, string> = SAME_ORIGIN) =>
    await app.inject({ method: 'POST', url: '/auth/signin', headers: { ...FORM, ...headers }, payload: form(fields) })

  const back = await post({ username: 'alice', password: PASSWORD, rd: 'https://app.example.org/orders/7?page=2&sort=asc' })
  t.equal(back.statusCode, 303)
  t.equal(back.headers.location, 'https://app.example.org/orders/7?page=2&sort=asc', 'back where the person was going, query kept')
  const cookie = tokenCookieOf(back.headers['set-cookie'])
  t.match(cookie, /^AuthToken1=2[A-Za-z0-9_-]{45}; Max-Age=\d+; Path=\/; Expires=.*; HttpOnly; Secure; SameSite=Lax$/, 'the token cookie')
  const token = /^AuthToken1=([^;]+)/.exec(cookie ?? '')?.[1] ?? ''
  t.equal((await app.inject({ url: '/auth/Authenticate', headers: { authorization: `Bearer ${token}` } })).json().username, 'alice', 'the token is alice\'s')

  const evil = await post({ username: 'alice', password: PASSWORD, rd: 'https://evil.example/' })
  t.equal(evil.headers.location, '/auth/signin', 'an rd not allowed: the signed-in page instead')

  const page = await app.inject({ url: '/auth/signin', headers: { host: HOST, cookie: `AuthToken1=${token}` } })
  t.equal(page.statusCode, 200)
  assertPageHeaders(t, page.headers, 'signed-in page')
  assertNoInline(t, page.body, 'signed-in page')
  t.match(page.body, '<strong id="signed-in-user">alice</strong>', 'says who is signed in')
  t.match(page.body, /<ul class="list" id="sessions">(.|\n)*this browser/, 'lists the sessions, this one marked')
  t.match(page.body, /action="\/auth\/signout"/, 'offers sign-out')
  const again = await app.inject({ url: '/auth/signin?rd=https://app.example.org/x', headers: { host: HOST, cookie: `AuthToken1=${token}` } })
  t.equal(again.statusCode, 303, 'already signed in with an allowed rd: straight back')
  t.equal(again.headers.location, 'https://app.example.org/x')

  const wrong = await post({ username: 'alice', password: 'wrong', rd: '/orders' })
  t.equal(wrong.statusCode, 401)
  assertPageHeaders(t, wrong.headers, 'wrong password')
  t.match(wrong.body, /role="alert"[^>]*>The username or password is not right\./, 'says so')
  t.match(wrong.body, 'value="alice"', 'the username kept')
  t.match(wrong.body, `value="${OWN}/orders"`, 'the rd kept')
  t.notMatch(wrong.body, /"status"|Login Failed/, 'never the JSON body')
  t.equal(tokenCookieOf(wrong.headers['set-cookie']), undefined, 'no cookie')
  const unknown = await post({ username: 'nobody', password: 'wrong', rd: '/orders' })
  t.equal(unknown.statusCode, 401)
  t.equal(unknown.body.replace('value="nobody"', 'value="alice"'), wrong.body, 'an unknown user reads like a wrong password, but for the name typed')
  const missing = await post({ username: 'alice' })
  t.equal(missing.statusCode, 400)
  t.match(missing.body, 'Enter your username and password.')

  await post({ username: 'alice', password: 'wrong' })
  await post({ username: 'alice', password: 'wrong' })
  const locked = await post({ username: 'alice', password: PASSWORD })
  t.equal(locked.statusCode, 429, 'Login\'s limits hold: locked after 3 failures, even for the right password')
  t.match(locked.body, /Too many attempts\. Try again in/)
  t.ok(Number(locked.headers['retry-after']) > 0, 'Retry-After')
  t.equal(tokenCookieOf(locked.headers['set-cookie']), undefined, 'no cookie')

  await app.backends.audit.flush()
  const events = await app.backends.audit.list({ username: 'alice' })
  t.ok(events.some((event) => event.event === 'login.success'), 'audited as a Login success')
  t.ok(events.some((event) => event.event === 'login.failure' && event.outcome === 'wrong-password'), 'and a failure')
})

t.test('login CSRF: the rule of src/http/cross-site.ts holds for the sign-in and sign-out forms', async (t) => {
  const { app } = await buildTestApp(t, 'embedded')
  await app.accounts.add('alice', PASSWORD, false)
  const crossSite = { host: HOST, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' }
  const res = await app.inject({ method: 'POST', url: '/auth/signin', headers: { ...FORM, ...crossSite }, payload: form({ username: 'alice', password: PASSWORD }) })
  t.equal(res.statusCode, 403, 'a cross-site post is refused')
  t.equal(tokenCookieOf(res.headers['set-cookie']), undefined, 'no cookie')
  t.match(res.headers['content-type'], /^text\/html/, 'as a page')
  const sibling = await app.inject({ method: 'POST', url: '/auth/signin', headers: { ...FORM, host: HOST, origin: 'https://evil.example.org', 'sec-fetch-site': 'same-site' }, payload: form({ username: 'alice', password: PASSWORD }) })
  t.equal(sibling.statusCode, 403, 'a sibling origin too')
  t.equal((await app.inject({ method: 'POST', url: '/auth/signout', headers: { ...FORM, ...crossSite }, payload: '' })).statusCode, 403, 'sign-out too')
  t.equal((await app.inject({ method: 'POST', url: '/auth/signin/passkey', headers: { 'content-type': 'application/json', ...crossSite }, payload: '{}' })).statusCode, 403, 'a passkey sign-in too')
  t.equal((await app.inject({ method: 'POST', url: '/auth/signin', headers: { ...FORM, ...SAME_ORIGIN }, payload: form({ username: 'alice', password: PASSWORD }) })).statusCode, 303, 'this origin\'s own form passes')
})

t.test('sign-out: ends the token, clears the cookie, 303 to an allowed rd or the sign-in page (Postgres and Redis)', async (t) => {
  const { app } = await buildTestApp(t, 'real', { redirectAllowed: ['app.example.org'] })
  await app.accounts.add('alice', PASSWORD, false)
  const signIn = async (): Promise<string> => {
    const res = await app.inject({ method: 'POST', url: '/auth/signin', headers: { ...FORM, ...SAME_ORIGIN }, payload: form({ username: 'alice', password: PASSWORD }) })
    return /^AuthToken1=([^;]+)/.exec(tokenCookieOf(res.headers['set-cookie']) ?? '')?.[1] ?? ''
  }
  const token = await signIn()
  const button = await app.inject({ url: '/auth/signout', headers: { host: HOST, cookie: `AuthToken1=${token}` } })
  t.equal(button.statusCode, 200)
  assertPageHeaders(t, button.headers, 'sign-out page')
  t.match(button.body, /<form method="post" action="\/auth\/signout"/, 'a button, not a GET that signs out')
  t.equal((await app.inject({ url: '/auth/Authenticate', headers: { authorization: `Bearer ${token}` } })).statusCode, 200, 'GET changed nothing')

  const removal = await app.inject({ method: 'POST', url: '/auth/passkeys/unknown-id/delete', headers: { ...FORM, ...SAME_ORIGIN, cookie: `AuthToken1=${token}` }, payload: '' })
  t.equal(removal.statusCode, 303, 'removing a passkey one does not have: back to the account page (Post/Redirect/Get)')
  t.equal(removal.headers.location, '/auth/signin?done=passkey-removed#passkeys-section')
  const options = await app.inject({ method: 'POST', url: '/auth/passkeys/options', headers: { 'content-type': 'application/json', ...SAME_ORIGIN, cookie: `AuthToken1=${token}` }, payload: JSON.stringify({ current_password: PASSWORD }) })
  t.equal(options.statusCode, 200, 'a signed-in browser may register a passkey, with the password')
  const creation = options.json<{ options: { rp: { id: string }, user: { name: string }, authenticatorSelection: { residentKey: string, userVerification: string } } }>().options
  t.equal(creation.rp.id, HOST)
  t.equal(creation.user.name, 'alice')
  t.same(creation.authenticatorSelection, { residentKey: 'required', userVerification: 'required', requireResidentKey: true }, 'discoverable, user verification required')
  const fake = { id: 'AAAA', rawId: 'AAAA', type: 'public-key', response: { clientDataJSON: 'e30', attestationObject: '' }, clientExtensionResults: {} }
  const refused = await app.inject({ method: 'POST', url: '/auth/passkeys', headers: { 'content-type': 'application/json', ...SAME_ORIGIN, cookie: `AuthToken1=${token}` }, payload: JSON.stringify({ response: fake }) })
  t.equal(refused.statusCode, 400, 'an attestation that does not verify stores nothing')

  const out = await app.inject({ method: 'POST', url: '/auth/signout', headers: { ...FORM, ...SAME_ORIGIN, cookie: `AuthToken1=${token}` }, payload: form({ rd: 'https://app.example.org/bye' }) })
  t.equal(out.statusCode, 303)
  t.equal(out.headers.location, 'https://app.example.org/bye')
  t.match(tokenCookieOf(out.headers['set-cookie']), /^AuthToken1=; Max-Age=0; Path=\/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; Secure; SameSite=Lax$/, 'the cookie cleared with its attributes')
  t.equal((await app.inject({ url: '/auth/Authenticate', headers: { authorization: `Bearer ${token}` } })).statusCode, 403, 'the token ended')

  const second = await signIn()
  const plain = await app.inject({ method: 'POST', url: '/auth/signout', headers: { ...FORM, ...SAME_ORIGIN, cookie: `AuthToken1=${second}` }, payload: form({ rd: '//evil.example' }) })
  t.equal(plain.headers.location, '/auth/signin', 'an rd not allowed: the sign-in page')
  const stale = await app.inject({ method: 'POST', url: '/auth/signout', headers: { ...FORM, ...SAME_ORIGIN, cookie: `AuthToken1=${second}` }, payload: '' })
  t.equal(stale.statusCode, 303, 'an ended token: still cleared and sent on')
  const page = await app.inject({ url: '/auth/signin', headers: { host: HOST, cookie: `AuthToken1=${second}` } })
  t.match(page.body, /<h1>Sign in<\/h1>/, 'with an ended token the page asks to sign in')
})

t.test('passkeys: options for a discoverable sign-in; answers that prove nothing are refused', async (t) => {
  const { app } = await buildTestApp(t, 'embedded')
  await app.accounts.add('alice', PASSWORD, false)
  const json = { 'content-type': 'application/json', host: HOST }
  const options = await app.inject({ method: 'POST', url: '/auth/signin/passkey/options', headers: json, payload: '{}' })
  t.equal(options.statusCode, 200)
  const body = options.json<{ options: { challenge: string, rpId: string, userVerification: string, allowCredentials?: unknown[] } }>()
  t.equal(body.options.rpId, HOST, 'the RP id is the page\'s host by default')
  t.equal(body.options.userVerification, 'required', 'user verification required: a passkey stands for the second factor')
  t.same(body.options.allowCredentials ?? [], [], 'discoverable: no credential list')
  t.match(body.options.challenge, /^[A-Za-z0-9_-]{43}$/, '32 random bytes')
  const fake = { id: 'AAAA', rawId: 'AAAA', type: 'public-key', response: { clientDataJSON: '', authenticatorData: '', signature: '' }, clientExtensionResults: {} }
  const unknown = await app.inject({ method: 'POST', url: '/auth/signin/passkey', headers: json, payload: JSON.stringify({ response: fake }) })
  t.equal(unknown.statusCode, 401, 'an unknown credential: 401')
  t.same(unknown.json(), { status: 701, message: 'Login Failed' })
  t.equal((await app.inject({ method: 'POST', url: '/auth/signin/passkey', headers: json, payload: '{"response":"x"}' })).statusCode, 401, 'garbage: 401')
  t.equal((await app.inject({ method: 'POST', url: '/auth/passkeys/options', headers: json, payload: '{}' })).statusCode, 403, 'registering needs a signed-in browser')
  t.equal((await app.inject({ method: 'POST', url: '/auth/passkeys', headers: json, payload: '{}' })).statusCode, 403)
})
