import t, { type Test } from 'tap'
import { Writable } from 'node:stream'
import type { InjectOptions } from 'fastify'
import { buildInternalApp } from '../../src/app/internal-listener.js'
import { readOidc } from '../../src/config/parts/oidc.js'
import { hashClientSecret } from '../../src/oidc/index.js'
import { buildTestApp, type BackendKind } from '../support/app.js'

/*
 * The admin API's OpenID Connect clients (api-contract, Single sign-on): POST, GET and DELETE
 * /admin/oidc/clients in the contract's shapes, the refusals (400 with a detail naming the
 * parameter, 404 for an unknown client), the audit events, the secret shown once and nowhere
 * else; and, with the provider off, every route a 404 that says so. On Postgres + Redis and on
 * the embedded default.
 */

const KEY = 'admin-key-for-oidc-tests-0123456789-abcdef'
const OIDC = readOidc({ AUTH_OIDC_ISSUER: 'https://auth.example.org/oidc' }).oidc
const CLIENT_ID = /^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/
const DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/
const GRAFANA = { name: 'Grafana', redirect_uris: ['https://grafana.example.org/login/generic_oauth'] }

async function setUp (t: Test, kind: BackendKind, on = true) {
  const lines: string[] = []
  const logStream = new Writable({ write (chunk: Buffer, _encoding, done) { lines.push(chunk.toString()); done() } })
  const { app, config, database } = await buildTestApp(t, kind, { adminKey: KEY, logLevel: 'info', oidc: on ? OIDC : undefined }, { logStream })
  await app.ready()
  const internal = await buildInternalApp(app, config)
  t.teardown(async () => { await internal.close() })
  const admin = async (method: InjectOptions['method'], url: string, body?: unknown) => {
    const res = await internal.inject({
      method, url, headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { payload: JSON.stringify(body) })
    })
    return { status: res.statusCode, body: res.json<Record<string, unknown>>() }
  }
  return { app, admin, lines, database }
}

function routesContract (t: Test, kind: BackendKind): void {
  t.test('POST registers: the contract\'s answer, a confidential client\'s secret once, a public one\'s none', async (t) => {
    const { admin, database, lines } = await setUp(t, kind)
    const made = await admin('POST', '/admin/oidc/clients', {
      ...GRAFANA,
      post_logout_redirect_uris: ['https://grafana.example.org/login'],
      backchannel_logout_uri: 'https://grafana.example.org/backchannel'
    })
    t.equal(made.status, 200)
    const client = made.body.client as Record<string, unknown>
    const secret = made.body.client_secret
    t.same(Object.keys(made.body), ['status', 'message', 'client', 'client_secret'])
    t.match(made.body, { status: 0, message: 'Success' })
    t.same(Object.keys(client), ['client_id', 'name', 'redirect_uris', 'post_logout_redirect_uris', 'public', 'backchannel_logout_uri', 'created'], 'the contract\'s fields, never a hash')
    t.match(client, {
      client_id: CLIENT_ID,
      name: 'Grafana',
      redirect_uris: GRAFANA.redirect_uris,
      post_logout_redirect_uris: ['https://grafana.example.org/login'],
      public: false,
      backchannel_logout_uri: 'https://grafana.example.org/backchannel',
      created: DATE
    })
    t.match(secret, /^[A-Za-z0-9_-]{43}$/, 'the secret')
    const { rows } = await database.query<{ secret_hash: string }>('SELECT secret_hash FROM oidc_clients')
    t.same(rows.map((row) => row.secret_hash), [hashClientSecret(String(secret))], 'only its hash is kept')

    const cli = await admin('POST', '/admin/oidc/clients', { name: 'cli', redirect_uris: ['http://127.0.0.1:8400/cb'], public: true })
    t.equal(cli.status, 200)
    t.notOk('client_secret' in cli.body, 'a public client: no secret in the answer')
    t.match(cli.body.client, { public: true, post_logout_redirect_uris: [], backchannel_logout_uri: null })

    const list = await admin('GET', '/admin/oidc/clients')
    t.same(list.body, { status: 0, message: 'Success', clients: [client, cli.body.client] }, 'GET: every client, oldest first, as registered')
    const everything = `${lines.join('')}${JSON.stringify(list.body)}${JSON.stringify((await admin('GET', '/admin/events')).body)}`
    t.notOk(everything.includes(String(secret)), 'the secret is in no log line, listing or event')
    t.notOk(everything.includes(hashClientSecret(String(secret))), 'nor its hash')
  })

  t.test('DELETE removes: the client answered, then 404; audited with who did it', async (t) => {
    const { admin } = await setUp(t, kind)
    const made = await admin('POST', '/admin/oidc/clients', GRAFANA)
    const { client_id: clientId } = made.body.client as { client_id: string }
    const removed = await admin('DELETE', `/admin/oidc/clients/${clientId}`)
    t.same(removed, { status: 200, body: { status: 0, message: 'Success', client: made.body.client } })
    t.same((await admin('GET', '/admin/oidc/clients')).body.clients, [], 'gone from the list')
    const notFound = { status: 404, body: { status: 404, message: 'Not Found', detail: 'no such client' } }
    t.same(await admin('DELETE', `/admin/oidc/clients/${clientId}`), notFound, 'removed already: 404')
    t.same(await admin('DELETE', '/admin/oidc/clients/AAAAAAAAAAAAAAAAAAAAAA'), notFound, 'unknown: 404')
    t.same(await admin('DELETE', '/admin/oidc/clients/not%20an%20id'), notFound, 'not an id: 404')
    const events = (await admin('GET', '/admin/events?event=oidc.client_created')).body.events as Array<Record<string, unknown>>
    t.match(events, [{ event: 'oidc.client_created', outcome: `created:${clientId}`, username: null, client_ip: '127.0.0.1', credential: /^key:[0-9a-f]{8}$/ }])
    const removals = (await admin('GET', '/admin/events?event=oidc.client_removed')).body.events as Array<Record<string, unknown>>
    t.match(removals, [{ event: 'oidc.client_removed', outcome: `removed:${clientId}`, credential: /^key:[0-9a-f]{8}$/ }])
    t.equal(removals.length, 1, 'once')
  })

  t.test('refusals: 400 with a detail naming the parameter, never the value; nothing registered', async (t) => {
    const { admin } = await setUp(t, kind)
    const uriRule = 'must hold absolute URLs, https (http only for localhost, 127.0.0.1 or [::1]), without a fragment, at most 2048 characters'
    const cases: Array<[string, unknown, string]> = [
      ['no redirect_uris', { name: 'x' }, 'redirect_uris is required'],
      ['no name', { redirect_uris: GRAFANA.redirect_uris }, 'name is required'],
      ['redirect_uris empty', { ...GRAFANA, redirect_uris: [] }, 'redirect_uris needs at least one URL'],
      ['redirect_uris not a list', { ...GRAFANA, redirect_uris: { first: 'https://grafana.example.org/cb' } }, 'redirect_uris is not valid'],
      ['a redirect URI over plain http', { ...GRAFANA, redirect_uris: ['http://grafana.example.org/secret-path'] }, `redirect_uris ${uriRule}`],
      ['a redirect URI with a fragment', { ...GRAFANA, redirect_uris: ['https://grafana.example.org/cb#frag'] }, `redirect_uris ${uriRule}`],
      ['a post-logout URI over plain http', { ...GRAFANA, post_logout_redirect_uris: ['http://grafana.example.org/'] }, `post_logout_redirect_uris ${uriRule}`],
      ['a back-channel URI over plain http', { ...GRAFANA, backchannel_logout_uri: 'http://grafana.example.org/bc' },
        'backchannel_logout_uri must be an absolute URL, https (http only for localhost, 127.0.0.1 or [::1]), without a fragment, at most 2048 characters'],
      ['public not a boolean', { ...GRAFANA, public: 'yes' }, 'public is not valid'],
      ['a name of control characters', { ...GRAFANA, name: '\u0007' }, 'name must be 1 to 128 characters, without control characters'],
      ['a field the contract does not name', { ...GRAFANA, client_secret: 'mine' }, 'body must be an object of parameters']
    ]
    for (const [what, body, detail] of cases) {
      const refused = await admin('POST', '/admin/oidc/clients', body)
      t.same(refused, { status: 400, body: { status: 400, message: 'Bad Request', detail } }, what)
      t.notOk(JSON.stringify(refused.body).includes('secret-path'), `${what}: the value is not repeated`)
    }
    t.same((await admin('GET', '/admin/oidc/clients')).body.clients, [], 'nothing registered')
  })

  t.test('the admin API\'s OpenAPI document describes the routes', async (t) => {
    const { admin } = await setUp(t, kind)
    const paths = (await admin('GET', '/admin/openapi.json')).body.paths as Record<string, Record<string, unknown>>
    t.same(Object.keys(paths['/admin/oidc/clients'] ?? {}).sort(), ['get', 'post'])
    t.same(Object.keys(paths['/admin/oidc/clients/{client_id}'] ?? {}), ['delete'])
  })

  t.test('the provider off: every client route is a 404 that says why, and none is documented', async (t) => {
    const { admin } = await setUp(t, kind, false)
    const off = { status: 404, body: { status: 404, message: 'Not Found', detail: 'the OpenID Connect provider is off (AUTH_OIDC_ISSUER is not set)' } }
    t.same(await admin('POST', '/admin/oidc/clients', GRAFANA), off)
    t.same(await admin('GET', '/admin/oidc/clients'), off)
    t.same(await admin('DELETE', '/admin/oidc/clients/AAAAAAAAAAAAAAAAAAAAAA'), off)
    const paths = (await admin('GET', '/admin/openapi.json')).body.paths as Record<string, unknown>
    t.same(Object.keys(paths).filter((path) => path.includes('oidc')), [], 'not in the document')
    t.equal((await admin('GET', '/admin/users')).status, 200, 'the rest of the admin API is there')
  })
}

t.test('on Postgres and Redis', async (t) => { routesContract(t, 'real') })
t.test('on the embedded default', async (t) => { routesContract(t, 'embedded') })
