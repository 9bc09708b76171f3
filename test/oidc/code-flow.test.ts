import t, { type Test } from 'tap'
import * as oidc from 'openid-client'
import type { BackendKind } from '../support/app.js'
import { authenticate, authorize, Jar, PASSWORD, REDIRECT, setUp, signOut } from './support.js'

/*
 * The provider's authorization code flow driven by openid-client (panva), a relying party nobody
 * here wrote, against the service on a real socket: discovery, PKCE S256, the browser's way
 * through the service's sign-in page (a cookie jar and fetch, as a browser would follow it),
 * the code exchange, the ID token's claims, userinfo; the access token is a token of the service
 * (Authenticate: kind oidc) and ends with the sign-in session it came from, as the refresh token does.
 */

function flowContract (t: Test, kind: BackendKind): void {
  t.test('code flow with PKCE: sign-in page, tokens, claims; the access token is the service\'s and ends with the sign-in session', async (t) => {
    const { app, base, config, clientId } = await setUp(t, kind, { overrides: { introspectionClients: [{ id: 'gw', secret: 'introspection-secret-0123456789' }] } })
    const verifier = oidc.randomPKCECodeVerifier()
    const state = oidc.randomState()
    const nonce = oidc.randomNonce()
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT, scope: 'openid groups', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state, nonce
    })
    const jar = new Jar()
    const back = await authorize(base, jar, url, { username: 'alice', password: PASSWORD })
    t.ok(back.searchParams.get('code'), 'a code at the registered redirect_uri')
    const tokens = await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce })
    const claims = tokens.claims()
    const alice = await app.backends.users.findByUsername('alice')
    t.match(claims, { sub: alice?.id, preferred_username: 'alice', groups: ['ops'], aud: clientId, iss: `${base}/oidc` }, 'the ID token: sub is the account id')
    t.type(claims?.auth_time, 'number')
    t.same(claims?.amr, ['pwd'], 'amr: a password')
    t.ok(tokens.refresh_token, 'a refresh token with every code grant')

    t.match(await authenticate(app, tokens.access_token), { status: 0, kind: 'oidc', client_id: clientId, username: 'alice', groups: ['ops'] }, 'Authenticate takes it')
    const verified = await app.inject({ method: 'GET', url: '/auth/verify', headers: { authorization: `Bearer ${tokens.access_token}` } })
    t.match(verified.headers, { 'x-auth-kind': 'oidc', 'x-auth-client-id': clientId, 'x-auth-user': 'alice', 'x-auth-groups': 'ops' }, '/auth/verify takes it')
    const introspected = await app.inject({
      method: 'POST',
      url: '/auth/introspect',
      headers: { authorization: `Basic ${Buffer.from('gw:introspection-secret-0123456789').toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      payload: `token=${tokens.access_token}`
    })
    t.match(introspected.json(), { active: true, kind: 'oidc', client_id: clientId, username: 'alice', groups: ['ops'] }, 'introspection takes it')
    t.equal((await app.inject({ method: 'GET', url: '/auth/sessions', headers: { authorization: `Bearer ${tokens.access_token}` } })).statusCode, 403,
      'the account\'s own routes do not: an app\'s token changes nothing of the account')
    const info = await oidc.fetchUserInfo(config, tokens.access_token, claims?.sub ?? '')
    t.match(info, { sub: alice?.id, preferred_username: 'alice', groups: ['ops'] })

    // Single sign-on: a second authorization asks nothing of the person.
    const again = await authorize(base, jar, oidc.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' }))
    t.ok(again.searchParams.get('code'), 'signed in already: straight back with a code')

    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token ?? '')
    t.match(await authenticate(app, refreshed.access_token), { kind: 'oidc' }, 'a refresh gives a working access token')

    // Sign out at the service: every token the session gave out ends at once.
    const out = await signOut(base, jar)
    t.ok(out.status < 400, 'signed out')
    t.match(await authenticate(app, tokens.access_token), { status: 403 }, 'the access token ended with the sign-in session')
    t.match(await authenticate(app, refreshed.access_token), { status: 403 }, 'the refreshed one too')
    const refused = await oidc.refreshTokenGrant(config, refreshed.refresh_token ?? '').then(() => undefined, (error: unknown) => error)
    t.match(refused, { error: 'invalid_grant' }, 'and the refresh token')
  })
}

t.test('Postgres and Redis', async (t) => { flowContract(t, 'real') })
t.test('embedded default', async (t) => { flowContract(t, 'embedded') })
