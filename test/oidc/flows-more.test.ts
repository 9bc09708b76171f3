import t from 'tap'
import * as oidc from 'openid-client'
import { createSoftPasskey } from '../signin/soft-authenticator.js'
import { authenticate, browse, Jar, PASSWORD, pkceRequest, REDIRECT, setUp, signedInTokens } from './support.js'

/*
 * What issue 45 asks of the flows that no other file showed: no implicit or hybrid flow (only
 * `code` offered, every other response type refused with no token handed out, to a browser
 * already signed in); `groups` only with the `groups` scope (ID token and userinfo); and the
 * authorization endpoint signing a person in with a passkey on the service's sign-in page.
 */

t.test('no implicit or hybrid flow: only code offered; every other response type refused, no token in the answer', async (t) => {
  const flow = await setUp(t, 'embedded')
  const metadata = flow.config.serverMetadata()
  t.same(metadata.response_types_supported, ['code'], 'discovery offers the code flow alone')
  t.notOk(metadata.grant_types_supported?.includes('implicit'), 'no implicit grant')
  // Signed in already: a response type that were served would hand tokens out without a page.
  const { jar } = await signedInTokens(flow)
  for (const responseType of ['token', 'id_token', 'id_token token', 'code id_token', 'code token', 'code id_token token', 'none']) {
    const url = new URL(`${flow.base}/oidc/auth`)
    url.search = new URLSearchParams({ client_id: flow.clientId, redirect_uri: REDIRECT, response_type: responseType, scope: 'openid', state: 's', nonce: 'n' }).toString()
    const answer = await fetch(url, { redirect: 'manual', headers: { cookie: jar.header() } })
    const location = answer.headers.get('location') ?? ''
    const body = location === '' ? await answer.text() : ''
    t.notMatch(`${location} ${body}`, /access_token=|id_token=|[?&#]code=/, `${responseType}: no token and no code`)
    t.match(`${location} ${body}`, /unsupported_response_type|unauthorized_client|invalid_request/, `${responseType}: refused`)
  }
})

t.test('groups only with the groups scope: ID token and userinfo', async (t) => {
  const flow = await setUp(t, 'embedded')
  const without = (await signedInTokens(flow)).tokens
  t.match(without.claims(), { preferred_username: 'alice' })
  t.notOk(Object.hasOwn(without.claims() ?? {}, 'groups'), 'openid alone: no groups in the ID token')
  const info = await oidc.fetchUserInfo(flow.config, without.access_token, oidc.skipSubjectCheck)
  t.match(info, { preferred_username: 'alice' })
  t.notOk(Object.hasOwn(info, 'groups'), 'nor at userinfo')
  const withGroups = (await signedInTokens(flow, new Jar(), { scope: 'openid groups' })).tokens
  t.same(withGroups.claims()?.groups, ['ops'], 'with the groups scope: groups in the ID token')
  t.same((await oidc.fetchUserInfo(flow.config, withGroups.access_token, oidc.skipSubjectCheck)).groups, ['ops'], 'and at userinfo')
})

t.test('a passkey on the service\'s sign-in page signs a person in at the authorization endpoint', async (t) => {
  const flow = await setUp(t, 'embedded')
  const { base, app } = flow
  const json = { 'content-type': 'application/json', origin: base }
  // alice registers a passkey from a signed-in browser.
  const login = (await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'alice', password: PASSWORD } })).json<{ token: string }>().token
  const passkey = createSoftPasskey()
  const post = async (path: string, body: unknown, jar?: Jar, cookie?: string): Promise<Response> => {
    const response = await fetch(`${base}${path}`, { method: 'POST', redirect: 'manual', headers: { ...json, cookie: cookie ?? jar?.header() ?? '' }, body: JSON.stringify(body) })
    jar?.take(response)
    return response
  }
  const registration = (await (await post('/auth/passkeys/options', { current_password: PASSWORD }, undefined, `AuthToken1=${login}`)).json() as { options: { challenge: string, rp: { id: string } } }).options
  t.equal((await post('/auth/passkeys', { response: passkey.register(registration, base) }, undefined, `AuthToken1=${login}`)).status, 200, 'a passkey registered')

  // A new browser: the client sends it to the provider, the provider to the sign-in page.
  const jar = new Jar()
  const { url, verifier, state } = await pkceRequest(flow.config)
  const arrival = await browse(base, jar, url)
  if (!('page' in arrival)) throw new Error('a new browser went back to the client without signing in')
  t.equal(arrival.page.url.pathname, '/auth/signin', 'the sign-in page')
  const rd = arrival.page.url.searchParams.get('rd') ?? ''
  t.match(rd, /^\/auth\/oidc\/interaction\//, 'which goes back to the provider after')

  // The page's script: options, the authenticator's answer, then where the answer says to go.
  const options = (await (await post('/auth/signin/passkey/options', {}, jar)).json() as { options: { challenge: string, rpId: string } }).options
  const signedIn = await post('/auth/signin/passkey', { response: passkey.assert(options, base), rd }, jar)
  t.equal(signedIn.status, 200, 'the passkey signs in')
  const { redirect } = await signedIn.json() as { redirect: string }
  const there = new URL(redirect, base)
  t.equal(`${there.origin}${there.pathname}${there.search}`, `${base}${rd}`, 'and sends the browser back to the interaction')
  const back = await browse(base, jar, new URL(redirect, base))
  if (!('back' in back)) throw new Error(`no way back to the client: ${back.page.url.pathname} ${back.page.status}`)
  const tokens = await oidc.authorizationCodeGrant(flow.config, back.back, { pkceCodeVerifier: verifier, expectedState: state })
  t.match(tokens.claims(), { preferred_username: 'alice' }, 'the client has alice\'s ID token')
  t.match(await authenticate(app, tokens.access_token), { status: 0, kind: 'oidc', username: 'alice' }, 'and a token of the service')
})

t.test('the sign-in page\'s limits and events apply at the authorization endpoint: failures audited, a locked account gets no code', async (t) => {
  const flow = await setUp(t, 'embedded', { overrides: { maxFailedLogins: 2 } })
  const { base, app } = flow
  const jar = new Jar()
  const { url } = await pkceRequest(flow.config)
  for (let i = 0; i < 2; i++) {
    const wrong = await browse(base, jar, url, { username: 'alice', password: 'not the password at all' })
    t.ok('page' in wrong && wrong.page.url.pathname === '/auth/signin', `wrong password ${i + 1}: the sign-in page again, no way back to the client`)
  }
  const locked = await browse(base, jar, url, { username: 'alice', password: PASSWORD })
  t.ok('page' in locked, 'locked: the right password now gets no code either')
  const events = async (event: string): Promise<string[]> => (await app.backends.audit.list({ event, username: 'alice' })).map((found) => found.outcome)
  t.same((await events('login.failure')).filter((outcome) => outcome === 'wrong-password').length, 2, 'each wrong password a login.failure')
  t.same(await events('login.lockout'), ['locked-60s'], 'the lock a login.lockout event')
  t.same(await events('login.refused'), ['account-locked'], 'the right password while locked a login.refused event')
  t.same(await events('oidc.authorized'), [], 'nothing authorized')
  await app.accounts.unlock('alice')
  const back = await browse(base, jar, url, { username: 'alice', password: PASSWORD })
  t.ok('back' in back && back.back.searchParams.has('code'), 'unlocked: a code')
  t.same((await events('login.success')).length, 1, 'the sign-in a login.success event')
})
