import t, { type Test } from 'tap'
import { createServer } from 'node:net'
import * as oidc from 'openid-client'
import { readOidc } from '../../src/config/parts/oidc.js'
import { buildTestApp, type BackendKind } from '../support/app.js'

/*
 * The provider's authorization code flow driven by openid-client (panva), a relying party nobody
 * here wrote, against the service on a real socket: discovery, PKCE S256, the browser's way
 * through the service's sign-in page (a cookie jar and fetch, as a browser would follow it),
 * the code exchange, the ID token's claims, userinfo; the access token is a token of the service
 * (Authenticate: kind oidc) and ends with the sign-in session it came from, as the refresh token does.
 */

const PASSWORD = 'a long enough passphrase 1'
const REDIRECT = 'http://127.0.0.1:9/callback'

async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => { typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port')) })
    })
  })
}

/** A browser's cookies, by name (paths ignored: sending one more cookie harms nothing here). */
class Jar {
  readonly cookies = new Map<string, string>()
  take (response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';')
      const equals = pair.indexOf('=')
      const name = pair.slice(0, equals).trim()
      const value = pair.slice(equals + 1).trim()
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
  }

  header (): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
  }
}

async function setUp (t: Test, kind: BackendKind) {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const settings = readOidc({ AUTH_OIDC_ISSUER: `${base}/oidc` }).oidc
  const { app } = await buildTestApp(t, kind, { oidc: settings, introspectionClients: [{ id: 'gw', secret: 'introspection-secret-0123456789' }] })
  await app.listen({ port, host: '127.0.0.1' })
  await app.accounts.add('alice', PASSWORD, false)
  await app.accounts.setGroups('alice', ['ops'])
  const { client, secret } = await app.oidcClients.create({ name: 'Grafana', redirectUris: [REDIRECT] }, { userAgent: 'test' })
  const config = await oidc.discovery(new URL(`${base}/oidc`), client.clientId, secret, undefined, { execute: [oidc.allowInsecureRequests] })
  return { app, base, config, clientId: client.clientId }
}

/** Follows a browser's way from the authorization URL to the redirect back to the client, signing in when asked. */
async function authorize (base: string, jar: Jar, url: URL, signIn?: { username: string, password: string }): Promise<URL> {
  let next: string = url.href
  for (let hop = 0; hop < 12; hop++) {
    const target = new URL(next, base)
    if (target.href.startsWith(REDIRECT)) return target
    let response: Response
    if (target.pathname === '/auth/signin' && signIn !== undefined && !jar.cookies.has('AuthToken1')) {
      const body = new URLSearchParams({ username: signIn.username, password: signIn.password, rd: target.searchParams.get('rd') ?? '' })
      response = await fetch(`${base}/auth/signin`, { method: 'POST', redirect: 'manual', headers: { cookie: jar.header(), origin: base, 'content-type': 'application/x-www-form-urlencoded' }, body })
    } else {
      response = await fetch(target, { redirect: 'manual', headers: { cookie: jar.header() } })
    }
    jar.take(response)
    const location = response.headers.get('location')
    if (location === null) throw new Error(`${target.pathname}: ${response.status} without a redirect: ${(await response.text()).slice(0, 300)}`)
    next = location
  }
  throw new Error('too many redirects')
}

function flowContract (t: Test, kind: BackendKind): void {
  t.test('code flow with PKCE: sign-in page, tokens, claims; the access token is the service\'s and ends with the sign-in session', async (t) => {
    const { app, base, config, clientId } = await setUp(t, kind)
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

    const authenticate = async (token: string) => (await app.inject({ method: 'POST', url: '/auth/Authenticate', payload: { token } })).json<Record<string, unknown>>()
    t.match(await authenticate(tokens.access_token), { status: 0, kind: 'oidc', client_id: clientId, username: 'alice', groups: ['ops'] }, 'Authenticate takes it')
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
    t.match(await authenticate(refreshed.access_token), { kind: 'oidc' }, 'a refresh gives a working access token')

    // Sign out at the service: every token the session gave out ends at once.
    const out = await fetch(`${base}/auth/signout`, { method: 'POST', redirect: 'manual', headers: { cookie: jar.header(), origin: base } })
    t.ok(out.status < 400, 'signed out')
    t.match(await authenticate(tokens.access_token), { status: 403 }, 'the access token ended with the sign-in session')
    t.match(await authenticate(refreshed.access_token), { status: 403 }, 'the refreshed one too')
    const refused = await oidc.refreshTokenGrant(config, refreshed.refresh_token ?? '').then(() => undefined, (error: unknown) => error)
    t.match(refused, { error: 'invalid_grant' }, 'and the refresh token')
  })
}

t.test('Postgres and Redis', async (t) => { flowContract(t, 'real') })
t.test('embedded default', async (t) => { flowContract(t, 'embedded') })
