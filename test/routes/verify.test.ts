import t, { type Test } from 'tap'
import { buildApp } from '../../src/app/app.js'
import { createRedisTokenStore } from '../../src/core/stores/redis/token-store.js'
import { buildTestApp } from '../support/app.js'
import {
  assertStatus, BODIES, expiredToken, tokenFor, unknownToken, type InjectOptions, type Reply
} from './support.js'

/**
 * /auth/verify, forward-auth for gateways (api-contract, Extensions): any method on
 * any path below it, the body never read; Bearer, then the cookie, then the original URL's
 * `token`; 200 with the identity in headers, 401 with WWW-Authenticate: Bearer for anything
 * else, 503 when the token store cannot answer; never a redirect.
 */

const UNAUTHORIZED = JSON.stringify({ status: 401, message: 'Unauthorized' })

// The default: AUTH_TRUST_PROXY=false, so no caller's X-Forwarded-Uri is believed.
const testApp = await buildTestApp(t, 'real')
const { app } = testApp
await testApp.addUser('alice', 'pw')
await testApp.addUser('josé.ωmega', 'pw')
const fresh = async (): Promise<string> => await tokenFor(t, app, 'alice', 'pw')
const aliceId = (await app.accounts.list()).find((account) => account.username === 'alice')?.id

function assertPass (t: Test, res: Reply, what: string, username = 'alice'): void {
  t.equal(res.statusCode, 200, `${what}: 200`)
  t.equal(res.body, '', `${what}: empty body`)
  t.equal(res.headers['x-auth-user'], encodeURIComponent(username), `${what}: X-Auth-User`)
  if (username === 'alice') t.equal(res.headers['x-auth-account-id'], aliceId, `${what}: X-Auth-Account-Id`)
  t.equal(res.headers['x-auth-federated'], 'false', `${what}: X-Auth-Federated`)
  t.match(res.headers['x-auth-expires'], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/, `${what}: X-Auth-Expires is an expiration_date`)
  t.equal(res.headers['cache-control'], 'no-store', `${what}: Cache-Control: no-store`)
}

function assertRefused (t: Test, res: Reply, what: string): void {
  t.equal(res.statusCode, 401, `${what}: 401`)
  t.equal(res.headers['www-authenticate'], 'Bearer', `${what}: WWW-Authenticate: Bearer`)
  t.equal(res.body, UNAUTHORIZED, `${what}: the same body for every refusal`)
  t.equal(res.headers['x-auth-user'], undefined, `${what}: no identity`)
  t.equal(res.headers.location, undefined, `${what}: never a redirect`)
  t.equal(res.headers['cache-control'], 'no-store', `${what}: Cache-Control: no-store`)
}

t.test('each source passes, with the identity in headers', async (t) => {
  const token = await fresh()
  assertPass(t, await app.inject({ method: 'GET', url: '/auth/verify', headers: { authorization: `Bearer ${token}` } }), 'Bearer')
  assertPass(t, await app.inject({ method: 'GET', url: '/auth/verify', headers: { cookie: `theme=dark; AuthToken1=${token}` } }), 'cookie')
  assertPass(t, await app.inject({ method: 'GET', url: `/auth/verify?token=${token}` }), 'query of the request itself (Envoy, nginx carry the original one)')
  assertPass(t, await app.inject({ method: 'GET', url: `/auth/verify/orders/7?page=2&token=${token}` }), 'query below a sub-path')
  const jose = await tokenFor(t, app, 'josé.ωmega', 'pw')
  const res = await app.inject({ method: 'GET', url: '/auth/verify', headers: { authorization: `Bearer ${jose}` } })
  assertPass(t, res, 'a non-ASCII username', 'josé.ωmega')
  t.equal(decodeURIComponent(String(res.headers['x-auth-user'])), 'josé.ωmega', 'X-Auth-User decodes to the username')
})

t.test('the order: Bearer, then cookie, then the original URL', async (t) => {
  const [good, bad] = [await fresh(), unknownToken()]
  assertRefused(t, await app.inject({ method: 'GET', url: `/auth/verify?token=${good}`, headers: { authorization: `Bearer ${bad}`, cookie: `AuthToken1=${good}` } }), 'a bad Bearer before a good cookie and query')
  assertPass(t, await app.inject({ method: 'GET', url: `/auth/verify?token=${bad}`, headers: { authorization: `Bearer ${good}`, cookie: `AuthToken1=${bad}` } }), 'a good Bearer before the rest')
  assertRefused(t, await app.inject({ method: 'GET', url: `/auth/verify?token=${good}`, headers: { cookie: `AuthToken1=${bad}` } }), 'a bad cookie before a good query')
  assertPass(t, await app.inject({ method: 'GET', url: `/auth/verify?token=${bad}`, headers: { cookie: `AuthToken1=${good}` } }), 'a good cookie before a bad query')
  assertPass(t, await app.inject({ method: 'GET', url: '/auth/verify', headers: { authorization: 'Basic YTpi', cookie: `AuthToken1=${good}` } }), 'another scheme is not ours: the cookie counts')
})

t.test('any method, any sub-path, the body never read', async (t) => {
  const token = await fresh()
  const headers = { authorization: `Bearer ${token}` }
  for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const) {
    for (const url of ['/auth/verify', '/auth/verify/', '/auth/verify/api/orders/42', '/auth/verify/a%20b/c?x=1']) {
      const res = await app.inject({ method, url, headers })
      t.equal(res.statusCode, 200, `${method} ${url}: 200`)
      t.equal(res.headers['x-auth-user'], 'alice', `${method} ${url}: the identity`)
    }
  }
  // Bodies the rest of the service would refuse (415, 400, 413): never parsed here.
  const bodies: Array<[string, InjectOptions]> = [
    ['an unsupported content type', { method: 'POST', url: '/auth/verify', headers: { ...headers, 'content-type': 'application/xml' }, payload: '<a/>' }],
    ['broken JSON', { method: 'POST', url: '/auth/verify/upload', headers: { ...headers, 'content-type': 'application/json' }, payload: '{"no' }],
    ['a body far over the limit', { method: 'PUT', url: '/auth/verify/files/1', headers: { ...headers, 'content-type': 'application/octet-stream' }, payload: Buffer.alloc(256 * 1024, 1) }],
    ['a form with a token of its own', { method: 'POST', url: '/auth/verify', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: `token=${token}` }]
  ]
  for (const [what, request] of bodies) {
    const res = await app.inject(request)
    if (what.startsWith('a form')) assertRefused(t, res, `${what}: a body token is not a source`)
    else assertPass(t, res, what)
  }
  assertRefused(t, await app.inject({ method: 'DELETE', url: '/auth/verify/x' }), 'no token, another method')
})

t.test('missing, unknown, expired, ended, ambiguous or malformed: 401 alike', async (t) => {
  const ended = await fresh()
  t.equal((await app.inject({ method: 'POST', url: `/auth/Logout/${ended}` })).statusCode, 200, 'logged out')
  const expired = await expiredToken(t, testApp, 'alice', 'pw')
  const [one, two] = [await fresh(), await fresh()]
  const cases: Array<[string, InjectOptions]> = [
    ['no token', { method: 'GET', url: '/auth/verify' }],
    ['unknown', { method: 'GET', url: '/auth/verify', headers: { authorization: `Bearer ${unknownToken()}` } }],
    ['ended by Logout', { method: 'GET', url: '/auth/verify', headers: { authorization: `Bearer ${ended}` } }],
    ['expired', { method: 'GET', url: '/auth/verify', headers: { cookie: `AuthToken1=${expired}` } }],
    ['not token-shaped', { method: 'GET', url: '/auth/verify?token=ats:t:*' }],
    ['two different cookies', { method: 'GET', url: `/auth/verify?token=${one}`, headers: { cookie: `AuthToken1=${one}; AuthToken1=${two}` } }],
    ['the token twice in the query, differently', { method: 'GET', url: `/auth/verify?token=${one}&token=${two}` }],
    ['a malformed Bearer header', { method: 'GET', url: `/auth/verify?token=${one}`, headers: { authorization: `Bearer ${one} ${one}` } }],
    ['an empty Bearer header', { method: 'GET', url: '/auth/verify', headers: { authorization: 'Bearer', cookie: `AuthToken1=${one}` } }]
  ]
  for (const [what, request] of cases) assertRefused(t, await app.inject(request), what)
})

t.test('X-Forwarded-Uri and X-Original-URI only from a trusted proxy', async (t) => {
  const token = await fresh()
  for (const name of ['x-forwarded-uri', 'x-original-uri']) {
    assertRefused(t, await app.inject({ method: 'GET', url: '/auth/verify', headers: { [name]: `/orders?token=${token}` } }),
      `${name} from a caller AUTH_TRUST_PROXY does not trust: ignored`)
  }
  const trusting = await buildTestApp(t, 'real', { trustProxy: ['127.0.0.1'] })
  await trusting.addUser('alice', 'pw')
  const theirs = await tokenFor(t, trusting.app, 'alice', 'pw')
  // AUTH_ORIGINAL_URI_HEADER names the one header believed: X-Forwarded-Uri by default, or X-Original-URI.
  const original = await buildTestApp(t, 'real', { trustProxy: ['127.0.0.1'], originalUriHeader: 'x-original-uri' }, {})
  await original.addUser('alice', 'pw')
  const originals = await tokenFor(t, original.app, 'alice', 'pw')
  for (const [name, other, service, token] of [['x-forwarded-uri', 'x-original-uri', trusting.app, theirs], ['x-original-uri', 'x-forwarded-uri', original.app, originals]] as const) {
    const res = await service.inject({ method: 'GET', url: '/auth/verify', headers: { [name]: `/orders/1?x=%20&token=${token}#top` } })
    t.equal(res.statusCode, 200, `${name} from a trusted proxy: its token counts`)
    t.equal(res.headers['x-auth-user'], 'alice', `${name}: the identity`)
    // A trusted proxy's original URL is the original: the verify URL's own query is not looked at.
    assertRefused(t, await service.inject({ method: 'GET', url: `/auth/verify?token=${token}`, headers: { [name]: '/orders' } }), `${name} without a token: none, whatever the verify URL says`)
    // A gateway passes on what else the client sent; the other name is the client's, never believed.
    assertRefused(t, await service.inject({ method: 'GET', url: '/auth/verify', headers: { [other]: `/?token=${token}` } }), `believing ${name}: a lone ${other} is not believed`)
    assertRefused(t, await service.inject({ method: 'GET', url: '/auth/verify', headers: { [name]: '/?token=garbage', [other]: `/?token=${token}` } }),
      `believing ${name}: a ${other} beside it does not win`)
    // A gateway file of before set the other name and passed a client's of this one on: two that differ are no token.
    assertRefused(t, await service.inject({ method: 'GET', url: '/auth/verify', headers: { [name]: `/?token=${token}`, [other]: '/orders?token=garbage' } }),
      `believing ${name}: a different ${other} beside it makes the query token ambiguous`)
    const same = await service.inject({ method: 'GET', url: '/auth/verify', headers: { [name]: `/o?token=${token}`, [other]: `/o?token=${token}` } })
    t.equal(same.statusCode, 200, `believing ${name}: the same URI under both names passes`)
  }
  assertRefused(t, await trusting.app.inject({ method: 'GET', url: '/auth/verify', headers: { 'x-forwarded-uri': '/a?token=%zz' } }), 'an undecodable original query: no token')
  const elsewhere = await trusting.app.inject({ method: 'GET', url: '/auth/verify', remoteAddress: '10.9.8.7', headers: { 'x-forwarded-uri': `/orders?token=${theirs}` } })
  assertRefused(t, elsewhere, 'the same header from an address not in the list')
})

t.test('token store unreachable: 503, never a pass', async (t) => {
  const base = await buildTestApp(t, 'real')
  const tokens = createRedisTokenStore({ url: 'redis://127.0.0.1:1', denyTtlMs: 1000, commandTimeoutMs: 200 })
  tokens.ready().catch(() => {})
  const dead = await buildApp(base.config, { backends: { ...base.app.backends, tokens, async close () { await tokens.close() } }, logger: false })
  t.teardown(async () => { await dead.close(); await tokens.close() })
  for (const request of [
    { method: 'GET' as const, url: '/auth/verify', headers: { authorization: `Bearer ${unknownToken()}` } },
    { method: 'POST' as const, url: '/auth/verify/x', headers: { cookie: `AuthToken1=${unknownToken()}` } }
  ]) {
    const res = await dead.inject(request)
    assertStatus(t, res, 503, BODIES.serviceUnavailable, `${request.method} ${request.url}`)
    t.equal(res.headers['x-auth-user'], undefined, 'no identity')
  }
  // Without a token there is nothing to ask the store: 401 still.
  assertRefused(t, await dead.inject({ method: 'GET', url: '/auth/verify' }), 'no token, store down')
})

t.test('the rest of the query is the upstream\'s: a query the service would refuse does not hide the token', async (t) => {
  const token = await fresh()
  assertPass(t, await app.inject({ method: 'GET', url: '/auth/verify/search?q=caf%E9', headers: { authorization: `Bearer ${token}` } }), 'Bearer, a Latin-1 query (Caddy and Envoy carry the query over)')
  assertPass(t, await app.inject({ method: 'GET', url: `/auth/verify?q=caf%E9&__proto__=x&token=${token}` }), 'the token beside parameters the strict parser refuses')
  t.equal((await app.inject({ method: 'GET', url: '/auth/Authenticate?q=caf%E9' })).statusCode, 400, 'elsewhere such a query is still a 400')
})
