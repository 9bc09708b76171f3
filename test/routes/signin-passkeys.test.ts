import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp } from '../support/app.js'
import { createSoftPasskey, type SoftPasskey } from '../signin/soft-authenticator.js'

/*
 * Passkeys through inject with a software authenticator: registered by a signed-in browser,
 * a sign-in that is a Login (cookie, audit, limits), each challenge answered once, a counter
 * that goes back, no user verification, another origin or RP, a removed passkey, a disabled
 * account: all refused. The same in Chromium: test/integration/gateways/browser-sign-in.test.ts.
 */

const HOST = 'auth.example.org'
const ORIGIN = `http://${HOST}`
const PASSWORD = 'correct horse battery staple'
const JSON_HEADERS = { 'content-type': 'application/json', host: HOST, origin: ORIGIN, 'sec-fetch-site': 'same-origin' }

function tokenFrom (setCookie: string | string[] | undefined): string | undefined {
  const all = setCookie === undefined ? [] : Array.isArray(setCookie) ? setCookie : [setCookie]
  return /^AuthToken1=([^;]+)/.exec(all.find((line) => line.startsWith('AuthToken1=')) ?? '')?.[1]
}

async function post (app: FastifyInstance, url: string, body: unknown, cookie?: string) {
  return await app.inject({ method: 'POST', url, headers: { ...JSON_HEADERS, ...(cookie === undefined ? {} : { cookie: `AuthToken1=${cookie}` }) }, payload: JSON.stringify(body) })
}

async function register (app: FastifyInstance, token: string, passkey: SoftPasskey): Promise<number> {
  const options = (await post(app, '/auth/passkeys/options', { current_password: PASSWORD }, token)).json<{ options: { challenge: string, rp: { id: string } } }>().options
  return (await post(app, '/auth/passkeys', { response: passkey.register(options, ORIGIN) }, token)).statusCode
}

async function signInOptions (app: FastifyInstance): Promise<{ challenge: string, rpId: string }> {
  return (await post(app, '/auth/signin/passkey/options', {})).json<{ options: { challenge: string, rpId: string } }>().options
}

t.test('register, sign in, and every answer that proves nothing refused', async (t) => {
  const { app } = await buildTestApp(t, 'real', { maxFailedLogins: 50, redirectAllowed: ['app.example.org'] })
  await app.accounts.add('alice', PASSWORD, false)
  const login = await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'alice', password: PASSWORD } })
  const token = login.json<{ token: string }>().token
  const passkey = createSoftPasskey()
  t.equal(await register(app, token, passkey), 200, 'registered by a signed-in browser')
  const page = await app.inject({ url: '/auth/signin', headers: { host: HOST, cookie: `AuthToken1=${token}`, 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Chrome/142.0.0.0 Safari/537.36' } })
  t.match(page.body, /<ul class="list" id="passkeys">/, 'listed on the signed-in page')

  // A replayed registration (the same challenge) stores nothing more.
  const options = (await post(app, '/auth/passkeys/options', { current_password: PASSWORD }, token)).json<{ options: { challenge: string, rp: { id: string } } }>().options
  const other = createSoftPasskey()
  const answer = other.register(options, ORIGIN)
  t.equal((await post(app, '/auth/passkeys', { response: answer }, token)).statusCode, 200)
  t.equal((await post(app, '/auth/passkeys', { response: answer }, token)).statusCode, 400, 'a registration challenge is answered once')
  const foreign = createSoftPasskey()
  const foreignOptions = (await post(app, '/auth/passkeys/options', { current_password: PASSWORD }, token)).json<{ options: { challenge: string, rp: { id: string } } }>().options
  t.equal((await post(app, '/auth/passkeys', { response: foreign.register(foreignOptions, 'https://evil.example') }, token)).statusCode, 400, 'another origin: refused')

  const signedIn = await post(app, '/auth/signin/passkey', { response: passkey.assert(await signInOptions(app), ORIGIN), rd: 'https://app.example.org/x?y=1' })
  t.equal(signedIn.statusCode, 200, 'a passkey signs in')
  t.same(signedIn.json(), { status: 0, message: 'Success', redirect: 'https://app.example.org/x?y=1' }, 'and says where to go')
  const passkeyToken = tokenFrom(signedIn.headers['set-cookie'])
  t.equal((await app.inject({ url: '/auth/Authenticate', headers: { authorization: `Bearer ${passkeyToken ?? ''}` } })).json<{ username: string }>().username, 'alice', 'a token of alice\'s')
  t.equal((await post(app, '/auth/signin/passkey', { response: passkey.assert(await signInOptions(app), ORIGIN), rd: '//evil.example' })).json<{ redirect: string }>().redirect, '/auth/signin', 'an rd not allowed: the signed-in page')

  const refusals: Array<[string, () => Promise<Record<string, unknown>>]> = [
    ['a replayed answer (its challenge spent)', async () => { const o = await signInOptions(app); const a = passkey.assert(o, ORIGIN); await post(app, '/auth/signin/passkey', { response: a }); return a }],
    ['a challenge the service never issued', async () => passkey.assert({ challenge: 'bm90LWlzc3VlZA', rpId: HOST }, ORIGIN)],
    ['another origin', async () => passkey.assert(await signInOptions(app), 'https://evil.example')],
    ['another RP id', async () => passkey.assert({ ...(await signInOptions(app)), rpId: 'evil.example' }, ORIGIN)],
    ['no user verification', async () => passkey.assert(await signInOptions(app), ORIGIN, { userVerified: false })],
    ['a counter that went back (a cloned authenticator)', async () => passkey.assert(await signInOptions(app), ORIGIN, { counter: 1 })],
    ['another key claiming the credential', async () => ({ ...createSoftPasskey().assert(await signInOptions(app), ORIGIN), id: passkey.id, rawId: passkey.id })]
  ]
  for (const [what, make] of refusals) {
    const response = await make()
    const res = await post(app, '/auth/signin/passkey', { response })
    t.equal(res.statusCode, 401, `${what}: 401`)
    t.same(res.json(), { status: 701, message: 'Login Failed' }, `${what}: Login's answer`)
    t.equal(tokenFrom(res.headers['set-cookie']), undefined, `${what}: no cookie`)
  }

  await app.backends.audit.flush()
  const events = await app.backends.audit.list({ username: 'alice' })
  t.ok(events.some((event) => event.event === 'login.success' && event.outcome === 'issued-by-passkey'), 'audited as a Login by passkey')
  t.ok(events.some((event) => event.event === 'login.failure' && event.outcome === 'wrong-passkey'), 'a failed proof counted as a failed Login')

  const id = passkey.id
  t.equal((await app.inject({ method: 'POST', url: `/auth/passkeys/${id}/delete`, headers: { host: HOST, origin: ORIGIN, cookie: `AuthToken1=${token}` } })).statusCode, 303, 'removed, then back to the account page')
  t.equal((await post(app, '/auth/signin/passkey', { response: passkey.assert(await signInOptions(app), ORIGIN) })).statusCode, 401, 'a removed passkey signs nobody in')
})

t.test('limits and account state hold for a passkey sign-in', async (t) => {
  const { app } = await buildTestApp(t, 'embedded', { maxFailedLogins: 2 })
  await app.accounts.add('bob', PASSWORD, false)
  const token = (await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'bob', password: PASSWORD } })).json<{ token: string }>().token
  const passkey = createSoftPasskey()
  t.equal(await register(app, token, passkey), 200)
  for (let i = 0; i < 2; i++) await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'bob', password: 'wrong' } })
  const locked = await post(app, '/auth/signin/passkey', { response: passkey.assert(await signInOptions(app), ORIGIN) })
  t.equal(locked.statusCode, 429, 'a locked account: even a good passkey waits')
  t.ok(Number(locked.headers['retry-after']) > 0)

  const { app: other } = await buildTestApp(t, 'embedded')
  await other.accounts.add('carol', PASSWORD, false)
  const carolToken = (await other.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'carol', password: PASSWORD } })).json<{ token: string }>().token
  const carolKey = createSoftPasskey()
  t.equal(await register(other, carolToken, carolKey), 200)
  await other.accounts.setDisabled('carol', true)
  t.equal((await post(other, '/auth/signin/passkey', { response: carolKey.assert(await signInOptions(other), ORIGIN) })).statusCode, 401, 'a disabled account\'s passkey: refused')
})
