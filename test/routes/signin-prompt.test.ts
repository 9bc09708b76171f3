import t from 'tap'
import { setTimeout } from 'node:timers/promises'
import { hashToken } from '@auth-token-service/protocol/token'
import { buildTestApp } from '../support/app.js'
import { promptParameter } from '../../src/sign-in/sign-in-page.js'
import { FORM, form } from './support.js'

/*
 * prompt=login on the sign-in page (what the OpenID provider asks for prompt=login and max_age):
 * a browser that is signed in sees the form again, its account filled in, the prompt carried
 * through the POST and through a refused attempt; the sign-in presents the browser's token, so the
 * token stays the same and its expiry (its issue time, what the provider reads as auth_time)
 * moves to now. Without the prompt, a signed-in browser goes straight back, as before.
 */

const HOST = 'auth.example.org'
const OWN = `http://${HOST}`
const PASSWORD = 'correct horse battery staple'
const SAME_ORIGIN = { host: HOST, origin: OWN, 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'navigate' }
const PROMPT_FIELD = '<input type="hidden" name="prompt" value="login">'

t.test('promptParameter: prompt=login in an ordinary query, never inside a gateway\'s raw rd', async (t) => {
  t.equal(promptParameter('/auth/signin?prompt=login&rd=%2Fauth%2Foidc%2Finteraction%2Fx'), 'login')
  t.equal(promptParameter('/auth/signin?rd=%2Fx&prompt=login'), 'login', 'after an encoded rd')
  t.equal(promptParameter('/auth/signin?rd=https://app.example.org/x?a=1&prompt=login'), undefined, 'a raw rd takes the rest of the query: its prompt is the app\'s')
  t.equal(promptParameter('/auth/signin?rd=/orders&prompt=login'), undefined, 'a raw rd path too')
  t.equal(promptParameter('/auth/signin?prompt=none'), undefined, 'only login is one')
  t.equal(promptParameter('/auth/signin?prompt=login2'), undefined)
  t.equal(promptParameter('/auth/signin'), undefined)
})

t.test('signed in, prompt=login: the form again, the prompt carried, and the same token refreshed', async (t) => {
  const { app } = await buildTestApp(t, 'embedded', { redirectAllowed: ['app.example.org'] })
  await app.accounts.add('alice', PASSWORD, false)
  const post = async (fields: Record<string, string>, cookie?: string) =>
    await app.inject({ method: 'POST', url: '/auth/signin', headers: { ...FORM, ...SAME_ORIGIN, ...(cookie === undefined ? {} : { cookie }) }, payload: form(fields) })
  const first = await post({ username: 'alice', password: PASSWORD })
  const token = /AuthToken1=([^;]+)/.exec(String(first.headers['set-cookie']))?.[1] ?? ''
  const cookie = `AuthToken1=${token}`
  const expiry = async (): Promise<number> => (await app.backends.tokens.find(hashToken(token), true))?.expiresAt ?? 0
  const before = await expiry()

  const plain = await app.inject({ url: '/auth/signin?rd=https://app.example.org/x', headers: { host: HOST, cookie } })
  t.equal(plain.statusCode, 303, 'no prompt: straight back, as ever')

  const rd = '/auth/oidc/interaction/abc'
  const page = await app.inject({ url: `/auth/signin?prompt=login&rd=${encodeURIComponent(rd)}`, headers: { host: HOST, cookie } })
  t.equal(page.statusCode, 200, 'prompt=login: the form, though signed in')
  t.match(page.body, '<p class="lead">The application asks you to sign in again.</p>')
  t.match(page.body, PROMPT_FIELD, 'the prompt carried in the form')
  t.match(page.body, `<input type="hidden" name="rd" value="${OWN}${rd}">`, 'and where to go after')
  t.match(page.body, /id="username"[^>]*value="alice"/, 'the account signed in, filled in')
  t.match(String(page.headers['content-security-policy']), /default-src 'none'/, 'the pages\' CSP')
  const unsigned = await app.inject({ url: '/auth/signin?prompt=login', headers: { host: HOST } })
  t.match(unsigned.body, PROMPT_FIELD, 'not signed in: the form, the prompt carried too')

  const wrong = await post({ username: 'alice', password: 'wrong', rd, prompt: 'login' }, cookie)
  t.equal(wrong.statusCode, 401)
  t.match(wrong.body, PROMPT_FIELD, 'a refused attempt keeps the prompt')
  t.match(wrong.body, 'The application asks you to sign in again.')

  // Expiries are whole seconds: a second passes, so that a refresh shows.
  await setTimeout(1100)
  const again = await post({ username: 'alice', password: PASSWORD, rd, prompt: 'login' }, cookie)
  t.equal(again.statusCode, 303)
  t.equal(again.headers.location, `${OWN}${rd}`, 'back where it was going')
  t.match(String(again.headers['set-cookie']), `AuthToken1=${token};`, 'the same token: the browser\'s, presented and refreshed')
  t.ok(await expiry() > before, 'its expiry moved: issued again now')
})
