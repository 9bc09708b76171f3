import * as oidc from 'openid-client'
import t from 'tap'
import { loadConfig } from '../../src/config/config.js'
import { clientAuthenticator } from '../../src/core/routes/introspect.js'
import { buildTestApp } from '../support/app.js'
import { BODIES, assertStatus, badRequestBody, FORM, form, parseExpiration, tokenFor, unknownToken } from './support.js'

/**
 * POST /auth/introspect (RFC 7662): HTTP Basic against AUTH_INTROSPECTION_CLIENTS,
 * the active answer's fields, `{"active":false}` and nothing more for anything else, 404 when
 * no client is configured. Driven by openid-client's tokenIntrospection, an OAuth library
 * that speaks the RFC, over a real socket.
 */

const SECRET = 'a secret: of 16+ chars & more'
const clients = [{ id: 'gateway', secret: SECRET }, { id: 'other.client', secret: 'another-secret-0123456789' }]
const testApp = await buildTestApp(t, 'real', { introspectionClients: clients })
const { app } = testApp
await testApp.addUser('alice', 'pw')
await testApp.addUser('fed', 'pw', true)
const origin = await app.listen({ port: 0, host: '127.0.0.1' })
const basic = (id: string, secret: string): string =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`

function client (id: string, secret: string): oidc.Configuration {
  const config = new oidc.Configuration({ issuer: origin, introspection_endpoint: `${origin}/auth/introspect` }, id, undefined, oidc.ClientSecretBasic(secret))
  oidc.allowInsecureRequests(config)
  return config
}

t.test('openid-client\'s tokenIntrospection: active, with the RFC\'s fields', async (t) => {
  const token = await tokenFor(t, app, 'alice', 'pw')
  const login = await app.inject({ method: 'GET', url: `/auth/Authenticate/${token}` })
  const expires = parseExpiration(login.json<{ expiration_date: string }>().expiration_date) / 1000
  const answer = await oidc.tokenIntrospection(client('gateway', SECRET), token, { token_type_hint: 'access_token' })
  const account = (await app.accounts.list()).find((a) => a.username === 'alice')
  t.same({ ...answer }, { active: true, sub: account?.id, username: 'alice', exp: expires, iat: expires - 43200, token_type: 'Bearer', groups: [] }, 'exactly the contract\'s fields')

  const fedToken = await tokenFor(t, app, 'fed', 'pw')
  const fed = await oidc.tokenIntrospection(client('other.client', 'another-secret-0123456789'), fedToken)
  t.equal(fed.active, true, 'the second client works too')
  t.equal(Number(fed.exp) - Number(fed.iat), 86400, 'a federated token: its 24 h lifetime')
})

t.test('anything else is {"active":false} and nothing more', async (t) => {
  const ended = await tokenFor(t, app, 'alice', 'pw')
  await app.inject({ method: 'POST', url: `/auth/Logout/${ended}` })
  const [one, two] = [await tokenFor(t, app, 'alice', 'pw'), await tokenFor(t, app, 'alice', 'pw')]
  for (const [what, token] of [['unknown', unknownToken()], ['ended', ended], ['malformed', 'ats:t:*'], ['long', 'x'.repeat(5000)]]) {
    const answer = await oidc.tokenIntrospection(client('gateway', SECRET), token ?? '')
    t.same({ ...answer }, { active: false }, `${what}: openid-client reads inactive`)
  }
  const headers = { ...FORM, authorization: basic('gateway', SECRET) }
  const twice = await app.inject({ method: 'POST', url: '/auth/introspect', headers, payload: `token=${one}&token=${two}` })
  t.equal(twice.body, '{"active":false}', 'the token given twice (ambiguous): exactly {"active":false}')
  t.equal(twice.headers['content-type'], 'application/json; charset=utf-8', 'JSON')
  t.equal(twice.headers['cache-control'], 'no-store', 'no-store (RFC 7662 §2.2 answers carry token state)')
  const json = await app.inject({ method: 'POST', url: '/auth/introspect', headers: { authorization: basic('gateway', SECRET) }, payload: { token: 12 } })
  t.equal(json.body, '{"active":false}', 'a number: inactive')
  assertStatus(t, await app.inject({ method: 'POST', url: '/auth/introspect', headers, payload: '' }), 400, badRequestBody('token is required'), 'no token at all')
})

t.test('bad client credentials: 401 with WWW-Authenticate: Basic, before the body is read', async (t) => {
  const token = await tokenFor(t, app, 'alice', 'pw')
  const cases: Array<[string, string | undefined]> = [
    ['no Authorization', undefined],
    ['a wrong secret', basic('gateway', `${SECRET}x`)],
    ['a secret of another client', basic('gateway', 'another-secret-0123456789')],
    ['an unknown client', basic('nobody', SECRET)],
    ['a Bearer token instead', `Bearer ${token}`],
    ['not base64', 'Basic ***'],
    ['no colon', `Basic ${Buffer.from('gateway').toString('base64')}`]
  ]
  for (const [what, authorization] of cases) {
    const res = await app.inject({ method: 'POST', url: '/auth/introspect', headers: { ...FORM, ...(authorization === undefined ? {} : { authorization }) }, payload: form({ token }) })
    t.equal(res.statusCode, 401, `${what}: 401`)
    t.match(res.headers['www-authenticate'], /^Basic\b/, `${what}: WWW-Authenticate: Basic`)
    t.equal(res.body, '{"status":401,"message":"Unauthorized"}', `${what}: no token state`)
  }
  // Through the library: its error, not an answer.
  await t.rejects(oidc.tokenIntrospection(client('gateway', 'wrong secret, 16 chars long'), token), 'openid-client sees the refusal')
  // An oversized body from an unknown client is refused without being read (no 413).
  const big = await app.inject({ method: 'POST', url: '/auth/introspect', headers: FORM, payload: `token=${'x'.repeat(64 * 1024)}` })
  t.equal(big.statusCode, 401, 'a body over the limit from an unknown client: 401, not 413')
  t.equal((await app.inject({ method: 'GET', url: '/auth/introspect' })).statusCode, 405, 'GET: 405')
})

t.test('the secret is compared as sent, form-decoded as RFC 6749 §2.3.1 says', async (t) => {
  const accepts = clientAuthenticator([{ id: 'a.b', secret: 'p:ss w%rd+more&==' }])
  t.ok(accepts(basic('a.b', 'p:ss w%rd+more&==')), 'encoded as the RFC says')
  t.notOk(accepts(basic('a.b', 'p:ss w%rd+more&=')), 'one character short')
  t.notOk(accepts(basic('a.c', 'p:ss w%rd+more&==')), 'another id')
  t.notOk(accepts(undefined), 'nothing sent')
  t.notOk(clientAuthenticator([])(basic('', '')), 'no clients: nobody')
})

t.test('no clients configured: the endpoint is off, 404 for every method', async (t) => {
  const off = await buildTestApp(t, 'real')
  for (const method of ['POST', 'GET'] as const) {
    assertStatus(t, await off.app.inject({ method, url: '/auth/introspect', headers: { ...FORM, authorization: basic('gateway', SECRET) }, payload: form({ token: unknownToken() }) }), 404, BODIES.notFound, method)
  }
})

t.test('AUTH_INTROSPECTION_CLIENTS', async (t) => {
  t.same(loadConfig({ AUTH_INTROSPECTION_CLIENTS: ' gw:0123456789abcdef , k8s.ingress:s3cret:with:colons!! ' }).introspectionClients,
    [{ id: 'gw', secret: '0123456789abcdef' }, { id: 'k8s.ingress', secret: 's3cret:with:colons!!' }], 'pairs; a secret may hold colons')
  t.same(loadConfig({}).introspectionClients, [], 'unset: none')
  t.throws(() => loadConfig({ AUTH_INTROSPECTION_CLIENTS: 'gw:short' }), /AUTH_INTROSPECTION_CLIENTS: the secret of client "gw" is shorter than 16/, 'a short secret')
  t.throws(() => loadConfig({ AUTH_INTROSPECTION_CLIENTS: 'gw' }), /AUTH_INTROSPECTION_CLIENTS/, 'no secret')
  t.throws(() => loadConfig({ AUTH_INTROSPECTION_CLIENTS: 'g w:0123456789abcdef' }), /AUTH_INTROSPECTION_CLIENTS/, 'a bad id')
  t.throws(() => loadConfig({ AUTH_INTROSPECTION_CLIENTS: 'gw:0123456789abcdef,gw:0123456789abcdeg' }), /given twice/, 'an id twice')
})

t.test('wrong client credentials are limited per address and audited; none at all is a plain 401; the right ones are never refused', async (t) => {
  const limited = await buildTestApp(t, 'real', { introspectionClients: clients, maxFailedLogins: 3, lockoutSeconds: 600, maxLockoutSeconds: 600 })
  await limited.addUser('bea', 'pw')
  const token = await tokenFor(t, limited.app, 'bea', 'pw')
  const introspect = async (remoteAddress: string, authorization?: string) => await limited.app.inject({
    method: 'POST',
    url: '/auth/introspect',
    remoteAddress,
    headers: { ...FORM, 'user-agent': 'probe/1', ...(authorization === undefined ? {} : { authorization }) },
    payload: form({ token })
  })
  for (let i = 0; i < 12; i++) t.equal((await introspect('192.0.2.30')).statusCode, 401, `no credentials ${i + 1}: a plain 401`)
  t.equal((await introspect('192.0.2.30', basic('gateway', SECRET))).json<{ active: boolean }>().active, true, 'then the right ones work')
  for (let i = 0; i < 3; i++) t.equal((await introspect('192.0.2.30', basic('gateway', `wrong secret ${i}`))).statusCode, 401, `wrong secret ${i + 1}: 401`)
  const refused = await introspect('192.0.2.30', basic('gateway', 'wrong secret 3'))
  t.equal(refused.statusCode, 429, 'past the limit: 429')
  t.ok(Number(refused.headers['retry-after']) > 500, 'with Retry-After')
  t.equal((await introspect('192.0.2.30', basic('gateway', SECRET))).json<{ active: boolean }>().active, true, 'the right credentials are never refused')
  t.equal((await introspect('192.0.2.31', basic('nobody', SECRET))).statusCode, 401, 'another address is counted apart')
  t.equal((await tokenFor(t, limited.app, 'bea', 'pw')).length > 0, true, 'logins are not counted with them')
  await limited.app.backends.audit.flush()
  const events = await limited.app.backends.audit.list({ event: 'introspect.unauthorized' })
  t.same(events.map((e) => [e.clientIp, e.userAgent, e.outcome]), [
    ['192.0.2.30', 'probe/1', 'wrong-client-credentials'],
    ['192.0.2.30', 'probe/1', 'wrong-client-credentials'],
    ['192.0.2.30', 'probe/1', 'wrong-client-credentials'],
    ['192.0.2.30', 'probe/1', 'wrong-client-credentials-limited'],
    ['192.0.2.31', 'probe/1', 'wrong-client-credentials']
  ], 'each wrong attempt is an audit event; requests without credentials are not')
  t.notOk(JSON.stringify(events).includes('wrong secret'), 'no secret in the trail')
})
