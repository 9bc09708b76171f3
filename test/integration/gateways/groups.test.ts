import { request, type IncomingHttpHeaders } from 'node:http'
import t, { type Test } from 'tap'
import { buildInternalApp } from '../../../src/app/internal-listener.js'
import { buildTestApp, type TestApp } from '../../support/app.js'
import { startCaddy, startEchoUpstream, startNginx, type Gateway, type Upstream } from '../../support/gateways.js'
import { FORM, form, type LoginSuccess } from '../../routes/support.js'

/**
 * The access rule at the gateway (api-contract, Groups and access rules) through real nginx and
 * real Caddy running the files shipped in deploy/, each protecting /ops/ for the group ops beside
 * the token-only rest, in front of an upstream that echoes what it received. For each: a member
 * reaches /ops/ and the upstream sees X-Auth-Groups; an active token outside the group gets 403
 * (never 401, never the sign-in page, the upstream never reached); no token gets what any other
 * path gives; a removal through the admin API refuses the very next request; a client's own
 * ?group=, X-Auth-Groups or path spelling never widens access.
 */

const KEY = 'admin-key-for-tests-0123456789-abcdefghij'
const NAVIGATION = { 'sec-fetch-mode': 'navigate', accept: 'text/html,application/xhtml+xml' }

interface Echo { url: string, headers: Record<string, string | undefined> }
interface Answer { status: number, headers: IncomingHttpHeaders, body: string, echo: Echo | undefined }

interface Service {
  readonly testApp: TestApp
  readonly origin: string
  login (username: string): Promise<string>
  setGroups (username: string, groups: string[]): Promise<void>
}

/** The service, with alice in dev and ops, bob in dev, carol in none; its admin API on the internal app. */
async function startService (t: Test, trustProxy: string[] | undefined): Promise<Service> {
  const testApp = await buildTestApp(t, 'real', { adminKey: KEY, ...(trustProxy === undefined ? {} : { trustProxy }) })
  const { app, config } = testApp
  for (const username of ['alice', 'bob', 'carol']) await testApp.addUser(username, 'pw')
  const origin = await app.listen({ port: 0, host: '127.0.0.1' })
  const internal = await buildInternalApp(app, config)
  t.teardown(async () => { await internal.close() })
  const service: Service = {
    testApp,
    origin,
    async login (username) {
      const res = await app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username, password: 'pw' }) })
      if (res.statusCode !== 200) throw new Error(`login ${username}: ${res.statusCode} ${res.body}`)
      return res.json<LoginSuccess>().token
    },
    async setGroups (username, groups) {
      const res = await internal.inject({
        method: 'PUT',
        url: `/admin/users/${username}/groups`,
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ groups })
      })
      if (res.statusCode !== 200) throw new Error(`groups of ${username}: ${res.statusCode} ${res.body}`)
    }
  }
  await service.setGroups('alice', ['ops', 'dev'])
  await service.setGroups('bob', ['dev'])
  return service
}

/**
 * One GET through the gateway, the path sent as written (no dot segments resolved), with only
 * the headers given: node:http, not fetch, which sends a Sec-Fetch-Mode of its own (`cors`), so
 * that no request could be a browser's navigation.
 */
async function get (gateway: Gateway, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return await new Promise((resolve, reject) => {
    const { hostname, port } = new URL(gateway.origin)
    const req = request({ host: hostname, port, path, headers, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => { chunks.push(chunk) })
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8')
        const status = res.statusCode ?? 0
        resolve({ status, headers: res.headers, body, echo: status === 200 ? JSON.parse(body) as Echo : undefined })
      })
      res.on('error', reject)
    })
    req.on('timeout', () => { req.destroy(new Error(`no answer to ${path} in 10 s`)) })
    req.on('error', reject)
    req.end()
  })
}

function header (answer: Answer, name: string): string | undefined {
  const value = answer.headers[name]
  return Array.isArray(value) ? value.join(', ') : value
}

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` })

async function exercise (t: Test, service: Service, gateway: Gateway, upstream: Upstream): Promise<void> {
  const name = gateway.name

  /** A refusal for being outside the group: 403, no way to sign in offered, the upstream not reached. */
  async function refusedAsOutsider (t: Test, path: string, headers: Record<string, string>, what: string): Promise<void> {
    const before = upstream.seen.length
    const res = await get(gateway, path, headers)
    t.equal(res.status, 403, `${name}, ${what}: 403`)
    t.equal(header(res, 'location'), undefined, `${name}, ${what}: no redirect`)
    t.equal(header(res, 'www-authenticate'), undefined, `${name}, ${what}: no Bearer challenge`)
    t.equal(upstream.seen.length, before, `${name}, ${what}: the upstream never reached`)
  }

  t.test('a member reaches /ops/ by Bearer, cookie and query, and the upstream sees X-Auth-Groups', async (t) => {
    const token = await service.login('alice')
    const ways: Array<[string, string, Record<string, string>]> = [
      ['Bearer', '/ops/deploy', bearer(token)],
      ['cookie', '/ops/deploy', { cookie: `AuthToken1=${token}` }],
      ['query', `/ops/deploy?env=prod&token=${token}`, {}],
      ['Bearer, /ops itself', '/ops', bearer(token)],
      ['Bearer, a forged X-Auth-Groups beside it', '/ops/deploy', { ...bearer(token), 'x-auth-groups': 'admin' }],
      // A header a Connection header names is dropped on the way upstream (as hop-by-hop), after the gateway set it.
      ['Bearer, Connection naming X-Auth-Groups', '/ops/deploy', { ...bearer(token), connection: 'close, X-Auth-Groups' }]
    ]
    for (const [what, path, headers] of ways) {
      const res = await get(gateway, path, headers)
      // nginx answers /ops (the prefix /ops/ without its slash) with its own redirect to /ops/.
      if (name === 'nginx' && path === '/ops') {
        t.equal(res.status, 301, 'nginx, /ops: a redirect to /ops/')
        t.equal(new URL(header(res, 'location') ?? '', gateway.origin).pathname, '/ops/', 'nginx, /ops: to /ops/')
        continue
      }
      t.equal(res.status, 200, `${name}, ${what}: the upstream answers`)
      t.equal(res.echo?.url, path, `${name}, ${what}: the upstream got the original URL`)
      t.equal(res.echo?.headers['x-auth-user'], 'alice', `${name}, ${what}: X-Auth-User`)
      t.equal(res.echo?.headers['x-auth-groups'], 'dev,ops', `${name}, ${what}: X-Auth-Groups, every group of the account, sorted`)
    }
  })

  t.test('an active token outside the group: 403 at /ops/, never 401 or the sign-in page; elsewhere it passes', async (t) => {
    const bob = await service.login('bob')
    const carol = await service.login('carol')
    await refusedAsOutsider(t, '/ops/deploy', bearer(bob), 'bob (dev) by Bearer')
    await refusedAsOutsider(t, '/ops/deploy', { cookie: `AuthToken1=${bob}`, ...NAVIGATION }, 'bob by cookie, a browser\'s navigation')
    await refusedAsOutsider(t, `/ops/deploy?token=${bob}`, NAVIGATION, 'bob by query, a browser\'s navigation')
    await refusedAsOutsider(t, '/ops/deploy', bearer(carol), 'carol (no group)')
    await refusedAsOutsider(t, '/ops/deploy', { ...bearer(carol), 'x-auth-groups': 'ops' }, 'carol with a forged X-Auth-Groups: ops')
    if (name === 'caddy') {
      await refusedAsOutsider(t, '/ops', bearer(bob), 'bob at /ops')
    } else {
      // nginx sends /ops (its prefix /ops/ without the slash) to /ops/, before any check.
      const before = upstream.seen.length
      t.equal((await get(gateway, '/ops', bearer(bob))).status, 301, 'nginx, bob at /ops: a redirect to /ops/')
      t.equal(upstream.seen.length, before, 'nginx, bob at /ops: the upstream never reached')
    }
    const refused = await get(gateway, '/ops/deploy', bearer(bob))
    if (name === 'caddy') {
      // Caddy passes the service's own answer on.
      t.equal(refused.body, '', 'caddy: the service\'s empty body')
      t.equal(header(refused, 'cache-control'), 'no-store', 'caddy: Cache-Control: no-store')
    } else {
      // nginx answers auth_request's 403 with its own page; a 403 is not stored by a cache without a header saying so.
      t.match(refused.body, /403 Forbidden/, 'nginx: its own 403 page')
    }

    const passed = await get(gateway, '/orders', bearer(bob))
    t.equal(passed.status, 200, `${name}: bob passes at /orders`)
    t.equal(passed.echo?.headers['x-auth-groups'], 'dev', `${name}: X-Auth-Groups: dev`)
    const none = await get(gateway, '/orders', { ...bearer(carol), 'x-auth-groups': 'ops' })
    t.equal(none.status, 200, `${name}: carol passes at /orders`)
    t.equal(none.echo?.headers['x-auth-user'], 'carol', `${name}: as carol`)
    // The service sends no X-Auth-Groups for an account in none: neither does the gateway, whatever the client sent.
    t.equal(none.echo?.headers['x-auth-groups'], undefined, `${name}: no X-Auth-Groups upstream for an account in none, a forged one dropped`)
  })

  t.test('no token at /ops/: what any other path gives for no token', async (t) => {
    const before = upstream.seen.length
    for (const [what, headers] of [['an API call', {}], ['a browser\'s navigation', NAVIGATION]] as const) {
      const elsewhere = await get(gateway, '/orders?page=2', headers)
      const ops = await get(gateway, '/ops/deploy?page=2', headers)
      t.equal(ops.status, elsewhere.status, `${name}, ${what}: the same status as at /orders (${elsewhere.status})`)
      t.equal(header(ops, 'www-authenticate'), header(elsewhere, 'www-authenticate'), `${name}, ${what}: the same challenge`)
      t.equal(header(ops, 'location'), header(elsewhere, 'location')?.replace('/orders', '/ops/deploy'), `${name}, ${what}: the same place to sign in at, back to /ops/deploy`)
    }
    t.equal((await get(gateway, '/ops/deploy')).status, 401, `${name}: an API call without a token gets 401`)
    t.equal((await get(gateway, '/ops/deploy', NAVIGATION)).status, 302, `${name}: a navigation without a token goes to sign in`)
    t.equal(upstream.seen.length, before, `${name}: the upstream saw none of them`)
  })

  t.test('removed from the group through the admin API: refused at the next request; added back: passes', async (t) => {
    const token = await service.login('alice')
    t.equal((await get(gateway, '/ops/deploy', bearer(token))).status, 200, `${name}: alice passes`)
    await service.setGroups('alice', ['dev'])
    await refusedAsOutsider(t, '/ops/deploy', bearer(token), 'the request right after the removal')
    const elsewhere = await get(gateway, '/orders', bearer(token))
    t.equal(elsewhere.status, 200, `${name}: the same token still passes at /orders`)
    t.equal(elsewhere.echo?.headers['x-auth-groups'], 'dev', `${name}: with the new groups`)
    await service.setGroups('alice', ['dev', 'ops'])
    const back = await get(gateway, '/ops/deploy', bearer(token))
    t.equal(back.status, 200, `${name}: added back, the next request passes`)
    t.equal(back.echo?.headers['x-auth-groups'], 'dev,ops', `${name}: X-Auth-Groups again with ops`)
  })

  t.test('a client\'s own ?group= or path spelling never widens access to /ops/', async (t) => {
    const bob = await service.login('bob')
    const alice = await service.login('alice')
    for (const query of ['group=dev', 'group=dev,ops', 'group=', '%67roup=dev', 'group=dev&group=dev', 'token=x&group=dev']) {
      await refusedAsOutsider(t, `/ops/deploy?${query}`, bearer(bob), `bob at /ops/deploy?${query}`)
    }
    await refusedAsOutsider(t, '/ops/deploy', { ...bearer(bob), 'x-forwarded-uri': '/orders?group=dev' }, 'bob with a forged X-Forwarded-Uri')
    for (const path of ['//ops/deploy', '/x/../ops/deploy', '/%6Fps/deploy', '/ops//deploy', '/ops/./deploy']) {
      await refusedAsOutsider(t, path, bearer(bob), `bob at ${path}`)
    }
    // A rule the client adds: nginx never sends the client's query to /auth/verify; Caddy does
    // (`&{query}`, which keeps ?token= URLs working), where it is one more rule to be met.
    const narrowed = await get(gateway, '/ops/deploy?group=billing', bearer(alice))
    t.equal(narrowed.status, name === 'nginx' ? 200 : 403, `${name}: alice (dev, ops) at /ops/deploy?group=billing: ${name === 'nginx' ? 'the query is the upstream\'s' : 'billing must be met too'}`)
    const elsewhere = await get(gateway, '/orders?group=billing', bearer(alice))
    t.equal(elsewhere.status, name === 'nginx' ? 200 : 403, `${name}: alice at /orders?group=billing: ${name === 'nginx' ? 'the query is the upstream\'s' : 'the client\'s query is the rule'}`)
    t.equal((await get(gateway, '/orders?group=dev', bearer(bob))).status, 200, `${name}: bob at /orders?group=dev (a rule he meets) passes`)
    if (name === 'nginx') {
      for (const path of ['/_auth_verify/ops', '/_auth_verify/any', '/_auth_verify/']) {
        t.equal((await get(gateway, path, bearer(bob))).status, 404, `nginx: ${path} is not reachable from outside`)
      }
      // nginx matches locations case-sensitively: /OPS/ is the token-only location (deploy/nginx-forward-auth.conf says so).
      t.equal((await get(gateway, '/OPS/deploy', bearer(bob))).status, 200, 'nginx: /OPS/deploy is not /ops/ (documented)')
    } else {
      await refusedAsOutsider(t, '/OPS/deploy', bearer(bob), 'bob at /OPS/deploy (Caddy\'s path matcher ignores case)')
    }
  })
}

t.test('nginx (auth_request, deploy/nginx-forward-auth.conf): /ops/ for the group ops', async (t) => {
  const service = await startService(t, ['127.0.0.1'])
  const upstream = await startEchoUpstream(t)
  const gateway = await startNginx(t, service.origin, upstream)
  await exercise(t, service, gateway, upstream)
})

t.test('Caddy (forward_auth, deploy/Caddyfile): /ops/ for the group ops', async (t) => {
  const service = await startService(t, ['127.0.0.1'])
  const upstream = await startEchoUpstream(t)
  const gateway = await startCaddy(t, service.origin, upstream)
  await exercise(t, service, gateway, upstream)
})

t.test('Caddy, the service trusting no proxy: a ?token= URL still works at /ops/, and the rule still holds', async (t) => {
  const service = await startService(t, undefined)
  const upstream = await startEchoUpstream(t)
  const gateway = await startCaddy(t, service.origin, upstream)
  const alice = await service.login('alice')
  const bob = await service.login('bob')
  const passed = await get(gateway, `/ops/deploy?env=prod&token=${alice}`)
  t.equal(passed.status, 200, 'alice by ?token= passes without AUTH_TRUST_PROXY')
  t.equal(passed.echo?.headers['x-auth-groups'], 'dev,ops', 'with X-Auth-Groups')
  t.equal((await get(gateway, `/ops/deploy?token=${bob}`)).status, 403, 'bob by ?token=: 403')
  t.equal((await get(gateway, `/ops/deploy?token=${bob}&group=dev`)).status, 403, 'bob by ?token= with his own ?group=dev: 403')
})
