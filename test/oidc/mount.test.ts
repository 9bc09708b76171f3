import t, { type Test } from 'tap'
import * as oidc from 'openid-client'
import { readOidc } from '../../src/config/parts/oidc.js'
import { ConfigError } from '../../src/config/config-error.js'
import { freePort } from '../../support/processes.js'
import { buildTestApp } from '../support/app.js'
import { authorize, Jar, PASSWORD, pkceRequest, REDIRECT, setUp } from './support.js'

/*
 * Where the provider is (api-contract, Single sign-on: "served at that path on the public port";
 * "unset: off, and every OpenID route is 404"), and whose forwarded headers it believes
 * (issue 45: "trust the proxy as the service's AUTH_TRUST_PROXY says"): the issuer's path read from
 * AUTH_OIDC_ISSUER (paths of the service's own refused), a provider at a path other than the
 * other tests' `/oidc` found by discovery there alone and signing a person in, every OpenID route
 * a 404 with it unset, and X-Forwarded-Proto / X-Forwarded-For taken only from a trusted proxy.
 */

const OPENID_ROUTES: Array<['GET' | 'POST', string]> = [
  ['GET', '/oidc/.well-known/openid-configuration'],
  ['GET', '/oidc/jwks'],
  ['GET', '/oidc/auth?client_id=x&response_type=code&scope=openid&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcallback'],
  ['POST', '/oidc/token'],
  ['POST', '/oidc/device/auth'],
  ['GET', '/oidc/session/end'],
  ['GET', '/auth/oidc/interaction/abc']
]

t.test('AUTH_OIDC_ISSUER: its path is where the provider is; the root and the service\'s own paths are refused', async (t) => {
  t.match(readOidc({ AUTH_OIDC_ISSUER: 'https://auth.example.org/sso/oidc/' }).oidc, { issuer: 'https://auth.example.org/sso/oidc', path: '/sso/oidc' }, 'a trailing slash dropped')
  t.equal(readOidc({}).oidc, undefined, 'unset: off')
  for (const issuer of ['https://auth.example.org', 'https://auth.example.org/', 'https://auth.example.org/auth/oidc', 'https://auth.example.org/admin', 'https://auth.example.org/oidc?x=1']) {
    t.throws(() => readOidc({ AUTH_OIDC_ISSUER: issuer }), ConfigError, `${issuer}: refused`)
  }
})

t.test('unset: every OpenID route is a 404', async (t) => {
  const { app } = await buildTestApp(t, 'embedded')
  for (const [method, url] of OPENID_ROUTES) {
    t.equal((await app.inject({ method, url })).statusCode, 404, `${method} ${url.split('?')[0] ?? ''}: 404`)
  }
})

t.test('at another path: discovery there names every endpoint under it, a person signs in through it, and /oidc is nothing', async (t) => {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const issuer = `${base}/sso/oidc`
  const { app } = await buildTestApp(t, 'embedded', { oidc: readOidc({ AUTH_OIDC_ISSUER: issuer }).oidc })
  await app.listen({ port, host: '127.0.0.1' })
  await app.accounts.add('alice', PASSWORD, false)
  const { client, secret } = await app.oidcClients.create({ name: 'Grafana', redirectUris: [REDIRECT] }, { userAgent: 'test' })
  const config = await oidc.discovery(new URL(issuer), client.clientId, secret, undefined, { execute: [oidc.allowInsecureRequests] })
  const metadata = config.serverMetadata()
  t.equal(metadata.issuer, issuer)
  const endpoints = ['authorization_endpoint', 'token_endpoint', 'userinfo_endpoint', 'jwks_uri', 'end_session_endpoint', 'revocation_endpoint', 'device_authorization_endpoint'] as const
  for (const name of endpoints) t.ok(metadata[name]?.startsWith(`${issuer}/`), `${name} is under the issuer: ${metadata[name] ?? ''}`)
  const { url, verifier, state } = await pkceRequest(config)
  const back = await authorize(base, new Jar(), url, { username: 'alice', password: PASSWORD })
  const tokens = await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state })
  t.match(tokens.claims(), { iss: issuer, preferred_username: 'alice' }, 'signed in through the provider at its path')
  for (const [method, url] of OPENID_ROUTES.filter(([, url]) => url.startsWith('/oidc/'))) {
    t.equal((await app.inject({ method, url })).statusCode, 404, `${method} ${url.split('?')[0] ?? ''}: not the provider's`)
  }
})

/** The provider's cookies a forwarded authorization request is answered with, and the client IPs of the two oidc.authorized events (the first sign-in's, then the forwarded one's). */
async function forwarded (t: Test, trustProxy: boolean | string[]): Promise<{ secure: boolean[], eventIps: string[] }> {
  const flow = await setUp(t, 'embedded', { overrides: { trustProxy } })
  const jar = new Jar()
  // Signed in once (single sign-on from here on), then one authorization through a TLS proxy.
  const first = await pkceRequest(flow.config)
  await authorize(flow.base, jar, first.url, { username: 'alice', password: PASSWORD })
  const { url } = await pkceRequest(flow.config)
  const answer = await fetch(url, { redirect: 'manual', headers: { cookie: jar.header(), 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.7' } })
  t.ok(answer.headers.get('location')?.startsWith(`${REDIRECT}?code=`), 'single sign-on: straight back with a code')
  const cookies = answer.headers.getSetCookie().filter((cookie) => cookie.startsWith('_'))
  t.ok(cookies.length > 0, 'the provider sets its cookies')
  // The event is recorded beside the answer, not before it.
  let events = await flow.app.backends.audit.list({ event: 'oidc.authorized' })
  for (let tries = 0; events.length < 2 && tries < 50; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    events = await flow.app.backends.audit.list({ event: 'oidc.authorized' })
  }
  t.equal(events.length, 2, 'both authorizations recorded')
  return { secure: cookies.map((cookie) => /;\s*secure/i.test(cookie)), eventIps: events.map((event) => event.clientIp ?? '').sort() }
}

t.test('AUTH_TRUST_PROXY: the provider takes a trusted proxy\'s scheme and client address, and nobody else\'s', async (t) => {
  const trusted = await forwarded(t, true)
  t.ok(trusted.secure.every(Boolean), 'trusted: the proxy said https, so the provider\'s cookies are Secure')
  t.same(trusted.eventIps, ['127.0.0.1', '203.0.113.7'], 'trusted: oidc.authorized names the address the proxy forwarded')
  const untrusted = await forwarded(t, false)
  t.notOk(untrusted.secure.some(Boolean), 'not trusted: plain http, no Secure cookie')
  t.same(untrusted.eventIps, ['127.0.0.1', '127.0.0.1'], 'not trusted: the peer\'s address')
  // Trusting only some proxies' addresses: the peer (127.0.0.1) is not one of them.
  const elsewhere = await forwarded(t, ['10.9.9.9'])
  t.notOk(elsewhere.secure.some(Boolean), 'a proxy trusted by address, the peer not it: no Secure cookie')
  t.same(elsewhere.eventIps, ['127.0.0.1', '127.0.0.1'], 'a proxy trusted by address, the peer not it: the peer\'s address')
  const loopback = await forwarded(t, ['127.0.0.1'])
  t.ok(loopback.secure.every(Boolean), 'the peer is the trusted address: Secure cookies')
  t.same(loopback.eventIps, ['127.0.0.1', '203.0.113.7'], 'the peer is the trusted address: the forwarded address')
})
