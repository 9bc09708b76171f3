import t, { type Test } from 'tap'
import { createHash } from 'node:crypto'
import { migrate } from '../../src/core/migrate.js'
import type { Database } from '../../src/db/database.js'
import { createSqlAuditLog } from '../../src/core/stores/audit-log.js'
import { clientSecretMatches, createClientRemovals, createOidcClients, createSqlOidcClientStore, hashClientSecret, type NewClientInput, type OidcClientStore } from '../../src/oidc/index.js'
import { CLIENT_CACHE_MS } from '../../src/oidc/clients.js'
import { createMemoryArtifactStore } from '../../src/oidc/artifact-store.js'
import { freshPostgresDatabase, patientPostgres } from '../../support/postgres.js'
import { freshPglite } from '../support/pglite.js'
import { rejection } from '../support/rejection.js'

/*
 * The OpenID Connect clients (src/oidc): the store and the service over it, one suite run on
 * Postgres and on PGlite. What is stored (a secret's hash, never the secret), the URL rules and
 * their refusals, the provider's metadata, the audit events, and a removal that ends the client's
 * tokens (the hook) and is finished by the next one when that failed.
 */

type MakeDatabase = (t: Test) => Promise<Database>

const GRAFANA: NewClientInput = { name: 'Grafana', redirectUris: ['https://grafana.example.org/login/generic_oauth'] }
const CLIENT_ID = /^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/
const SECRET = /^[A-Za-z0-9_-]{43}$/
const ACTOR = { clientIp: '10.0.0.5', userAgent: 'ops/1', credential: 'key:0123abcd' }

function clientsContract (t: Test, makeDatabase: MakeDatabase): void {
  const setUp = async (t: Test, onRemoved?: (clientId: string) => Promise<void>) => {
    const db = await makeDatabase(t)
    t.teardown(async () => { await db.close() })
    await migrate(db)
    const audit = createSqlAuditLog(db)
    t.teardown(async () => { await audit.close() })
    const store = createSqlOidcClientStore(db)
    const clients = createOidcClients({ store, audit, onRemoved })
    const events = async () => {
      await audit.flush()
      return (await audit.list({})).map((event) => [event.event, event.outcome, event.clientIp, event.userAgent, event.credential])
    }
    return { db, store, audit, clients, events }
  }

  t.test('a confidential client: a secret shown once, only its SHA-256 stored, matched in constant time', async (t) => {
    const { db, clients, events } = await setUp(t)
    const { client, secret } = await clients.create({ ...GRAFANA, name: '  Grafana  ' }, ACTOR)
    t.match(client.clientId, CLIENT_ID)
    t.match(secret, SECRET, '32 random bytes, base64url')
    t.match(client, { name: 'Grafana', redirectUris: GRAFANA.redirectUris, postLogoutRedirectUris: [], public: false, backchannelLogoutUri: null }, 'the name trimmed')
    const expected = createHash('sha256').update(secret ?? '').digest('hex')
    t.equal(client.secretHash, expected, 'SHA-256, hex')
    const { rows } = await db.query<Record<string, unknown>>('SELECT * FROM oidc_clients')
    t.equal(rows.length, 1)
    t.notOk(JSON.stringify(rows).includes(secret ?? '-'), 'the secret is nowhere in the row')
    t.ok(clientSecretMatches(secret ?? '', client.secretHash ?? ''), 'the secret matches its hash')
    t.notOk(clientSecretMatches(`${secret ?? ''}x`, client.secretHash ?? ''), 'another does not')
    t.notOk(clientSecretMatches(secret ?? '', 'not hex'), 'nor against a hash that is none')
    t.equal(hashClientSecret(secret ?? ''), expected)
    const other = await clients.create(GRAFANA, ACTOR)
    t.not(other.client.clientId, client.clientId, 'ids are random')
    t.not(other.secret, secret, 'secrets too')
    t.same(await events(), [
      ['oidc.client_created', `created:${client.clientId}`, ACTOR.clientIp, ACTOR.userAgent, ACTOR.credential],
      ['oidc.client_created', `created:${other.client.clientId}`, ACTOR.clientIp, ACTOR.userAgent, ACTOR.credential]
    ], 'audited with who made it, never the secret')
  })

  t.test('a public client: no secret; its metadata says `none`, and every URL is kept as given', async (t) => {
    const { clients } = await setUp(t)
    const input: NewClientInput = {
      name: 'cli',
      public: true,
      redirectUris: ['http://127.0.0.1:8400/callback', 'http://localhost/cb', 'http://[::1]:9/cb', 'https://app.example.org', 'http://127.0.0.1:8400/callback'],
      postLogoutRedirectUris: ['https://app.example.org/bye?x=1'],
      backchannelLogoutUri: 'http://localhost:7000/backchannel'
    }
    const { client, secret } = await clients.create(input, {})
    t.equal(secret, undefined, 'no secret')
    t.equal(client.secretHash, null)
    t.same(client.redirectUris, ['http://127.0.0.1:8400/callback', 'http://localhost/cb', 'http://[::1]:9/cb', 'https://app.example.org'], 'loopback http allowed; kept exactly (no trailing slash added); a repeat once')
    t.same(await clients.metadataOf(client.clientId), {
      client_id: client.clientId,
      client_name: 'cli',
      redirect_uris: client.redirectUris,
      post_logout_redirect_uris: ['https://app.example.org/bye?x=1'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
      response_types: ['code'],
      backchannel_logout_uri: 'http://localhost:7000/backchannel',
      backchannel_logout_session_required: true
    }, 'oidc-provider\'s metadata: no client_secret')
  })

  t.test('a confidential client\'s metadata carries the hash as client_secret, for the provider to compare hashes', async (t) => {
    const { clients } = await setUp(t)
    const { client } = await clients.create(GRAFANA, {})
    t.same(await clients.metadataOf(client.clientId), {
      client_id: client.clientId,
      client_secret: client.secretHash,
      client_name: 'Grafana',
      redirect_uris: GRAFANA.redirectUris,
      post_logout_redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
      grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
      response_types: ['code'],
      backchannel_logout_session_required: true
    }, 'no backchannel_logout_uri when none is registered')
    t.equal(await clients.metadataOf('AAAAAAAAAAAAAAAAAAAAAA'), undefined, 'an unknown client')
    t.equal(await clients.metadataOf("x' OR 1=1 --"), undefined, 'not id-shaped: unknown without a query')
  })

  t.test('refusals: a 400 naming the parameter and the rule, and nothing stored', async (t) => {
    const { clients, store, events } = await setUp(t)
    const uriRule = 'must hold absolute URLs, https (http only for localhost, 127.0.0.1 or [::1]), without a fragment, at most 2048 characters'
    const refused: Array<[string, NewClientInput, string]> = [
      ['an empty name', { ...GRAFANA, name: '   ' }, 'name must be 1 to 128 characters, without control characters'],
      ['a name too long', { ...GRAFANA, name: 'x'.repeat(129) }, 'name must be 1 to 128 characters, without control characters'],
      ['a control character in the name', { ...GRAFANA, name: 'Graf\nana' }, 'name must be 1 to 128 characters, without control characters'],
      ['no redirect URI', { ...GRAFANA, redirectUris: [] }, 'redirect_uris needs at least one URL'],
      ['plain http to another host', { ...GRAFANA, redirectUris: ['http://grafana.example.org/cb'] }, `redirect_uris ${uriRule}`],
      ['http to a host named like localhost', { ...GRAFANA, redirectUris: ['http://localhost.example.org/cb'] }, `redirect_uris ${uriRule}`],
      ['a fragment', { ...GRAFANA, redirectUris: ['https://grafana.example.org/cb#x'] }, `redirect_uris ${uriRule}`],
      ['an empty fragment', { ...GRAFANA, redirectUris: ['https://grafana.example.org/cb#'] }, `redirect_uris ${uriRule}`],
      ['a relative URL', { ...GRAFANA, redirectUris: ['/login/generic_oauth'] }, `redirect_uris ${uriRule}`],
      ['another scheme', { ...GRAFANA, redirectUris: ['com.example.app:/cb'] }, `redirect_uris ${uriRule}`],
      ['javascript:', { ...GRAFANA, redirectUris: ['javascript:alert(1)'] }, `redirect_uris ${uriRule}`],
      ['a space the parser would drop', { ...GRAFANA, redirectUris: [' https://grafana.example.org/cb'] }, `redirect_uris ${uriRule}`],
      ['a newline the parser would drop', { ...GRAFANA, redirectUris: ['https://grafana.exam\nple.org/cb'] }, `redirect_uris ${uriRule}`],
      ['too long', { ...GRAFANA, redirectUris: [`https://grafana.example.org/${'a'.repeat(2030)}`] }, `redirect_uris ${uriRule}`],
      ['too many', { ...GRAFANA, redirectUris: Array.from({ length: 33 }, (_, i) => `https://grafana.example.org/${i}`) }, 'redirect_uris holds more than 32 URLs'],
      ['a bad post-logout URI', { ...GRAFANA, postLogoutRedirectUris: ['http://example.org/bye'] }, `post_logout_redirect_uris ${uriRule}`],
      ['a bad back-channel URI', { ...GRAFANA, backchannelLogoutUri: 'http://example.org/logout' }, 'backchannel_logout_uri must be an absolute URL, https (http only for localhost, 127.0.0.1 or [::1]), without a fragment, at most 2048 characters'],
      ['a back-channel URI with a fragment', { ...GRAFANA, backchannelLogoutUri: 'https://example.org/logout#f' }, 'backchannel_logout_uri must be an absolute URL, https (http only for localhost, 127.0.0.1 or [::1]), without a fragment, at most 2048 characters']
    ]
    for (const [what, input, detail] of refused) {
      t.match(await rejection(clients.create(input, {})), { status: 400, httpStatus: 400, detail }, what)
    }
    t.same(await store.list(), [], 'nothing stored')
    t.same(await events(), [], 'nothing audited')
    t.ok(await clients.create({ ...GRAFANA, name: 'x'.repeat(128), redirectUris: [`https://grafana.example.org/${'a'.repeat(2020)}`] }, {}), '128 characters and a 2048-character URL fit')
  })

  t.test('the table holds the rules too: a public client has no hash, a confidential one a SHA-256 hex', async (t) => {
    const { db } = await setUp(t)
    const insert = async (isPublic: boolean, hash: string | null) => await rejection(db.query(
      "INSERT INTO oidc_clients (client_id, name, redirect_uris, public, secret_hash) VALUES ('c', 'n', ARRAY['https://a.example/cb'], $1, $2)", [isPublic, hash]))
    t.ok(await insert(true, 'a'.repeat(64)), 'a public client with a hash: refused')
    t.ok(await insert(false, null), 'a confidential client without: refused')
    t.ok(await insert(false, 'the-secret-itself'), 'a confidential client with anything but a digest: refused')
    t.ok(await rejection(db.query("INSERT INTO oidc_clients (client_id, name, redirect_uris, public) VALUES ('c', 'n', '{}', true)")), 'no redirect URI: refused')
    t.equal(await insert(false, 'f'.repeat(64)), undefined, 'a digest: taken')
  })

  t.test('list: oldest first, never a secret', async (t) => {
    const { clients } = await setUp(t)
    const names = ['one', 'two', 'three']
    const made = []
    for (const name of names) made.push((await clients.create({ ...GRAFANA, name }, {})).client.clientId)
    t.same((await clients.list()).map((client) => [client.clientId, client.name]), made.map((id, i) => [id, names[i]]))
  })

  t.test('remove: the hook ends its tokens, then it is gone; unknown ids are a 404', async (t) => {
    const ended: string[] = []
    const { clients, store, events } = await setUp(t, async (clientId) => {
      // The provider no longer finds the client while its tokens are ended: none is given out meanwhile.
      t.equal(await clients.metadataOf(clientId), undefined, 'unknown to the provider while its tokens end')
      ended.push(clientId)
    })
    const { client } = await clients.create(GRAFANA, {})
    const kept = await clients.create({ ...GRAFANA, name: 'kept' }, {})
    const removed = await clients.remove(client.clientId, ACTOR)
    t.equal(removed.clientId, client.clientId, 'answers the client it removed')
    t.same(ended, [client.clientId], 'the hook was told')
    t.equal(await clients.metadataOf(client.clientId), undefined)
    t.same((await store.list()).map((row) => row.clientId), [kept.client.clientId], 'the other stays')
    t.match(await rejection(clients.remove(client.clientId, ACTOR)), { status: 404, detail: 'no such client' }, 'removed: a 404')
    t.match(await rejection(clients.remove('AAAAAAAAAAAAAAAAAAAAAA', ACTOR)), { status: 404, detail: 'no such client' }, 'unknown')
    t.match(await rejection(clients.remove('../../etc', ACTOR)), { status: 404, detail: 'no such client' }, 'not id-shaped')
    t.same((await events()).filter(([event]) => event === 'oidc.client_removed'),
      [['oidc.client_removed', `removed:${client.clientId}`, ACTOR.clientIp, ACTOR.userAgent, ACTOR.credential]], 'audited once')
  })

  t.test('a removal whose hook failed leaves the client unknown to the provider; the next one finishes it', async (t) => {
    let failing = true
    const calls: string[] = []
    const { clients, events } = await setUp(t, async (clientId) => {
      calls.push(clientId)
      if (failing) throw new Error('Redis is down')
    })
    const { client } = await clients.create(GRAFANA, {})
    t.match(await rejection(clients.remove(client.clientId, ACTOR)), { message: 'Redis is down' }, 'the failure is the answer')
    t.equal(await clients.metadataOf(client.clientId), undefined, 'the provider finds it no longer')
    t.same(await clients.list(), [], 'nor does the list')
    t.same((await events()).filter(([event]) => event === 'oidc.client_removed'), [], 'not audited as removed')
    failing = false
    t.equal((await clients.remove(client.clientId, ACTOR)).clientId, client.clientId, 'the retry finds it')
    t.same(calls, [client.clientId, client.clientId], 'and ends its tokens again')
    t.match(await rejection(clients.remove(client.clientId, ACTOR)), { status: 404 }, 'then it is gone')
    t.equal((await events()).filter(([event]) => event === 'oidc.client_removed').length, 1)
  })

  t.test('kept in memory between requests, a client removed on another instance is unknown here at once; without a mark, kept at most CLIENT_CACHE_MS', async (t) => {
    const { db, store, audit } = await setUp(t)
    // Two instances: one database, one place for the marks (Redis in production; here one shared store).
    const marks = createClientRemovals(createMemoryArtifactStore(), 'p:')
    let reads = 0
    const counted: OidcClientStore = { ...store, find: async (clientId) => { reads++; return await store.find(clientId) } }
    let clock = 1_000_000
    const here = createOidcClients({ store: counted, audit, removals: marks, now: () => clock })
    const there = createOidcClients({ store, audit, removals: marks })
    const { client } = await there.create(GRAFANA, {})
    const other = await there.create({ ...GRAFANA, name: 'other' }, {})

    t.match(await here.metadataOf(client.clientId), { client_id: client.clientId })
    t.match(await here.metadataOf(client.clientId), { client_id: client.clientId })
    t.equal(reads, 1, 'the second request is answered from memory')
    const first = await here.metadataOf(client.clientId)
    if (first !== undefined) first.redirect_uris.push('https://evil.example/cb')
    t.same((await here.metadataOf(client.clientId))?.redirect_uris, GRAFANA.redirectUris, 'each answer is a copy: none changes what the next request gets')

    await there.remove(client.clientId, ACTOR)
    t.equal(await here.metadataOf(client.clientId), undefined, 'removed there: unknown here at once')
    t.equal(reads, 1, 'by its mark, not by reading the database again')

    // What no mark announces (a row deleted by hand): served from memory until its time is up, then read again.
    t.match(await here.metadataOf(other.client.clientId), { client_id: other.client.clientId })
    await db.query('DELETE FROM oidc_clients WHERE client_id = $1', [other.client.clientId])
    clock += CLIENT_CACHE_MS - 1
    t.match(await here.metadataOf(other.client.clientId), { client_id: other.client.clientId }, 'within CLIENT_CACHE_MS: still the one in memory')
    clock += 1
    t.equal(await here.metadataOf(other.client.clientId), undefined, 'past it: read again, and gone')
    t.equal(reads, 3)
  })

  t.test('a removal that could not mark the client fails before anything changes', async (t) => {
    const { store, audit, clients: plain } = await setUp(t)
    const { client } = await plain.create(GRAFANA, {})
    const ended: string[] = []
    const clients = createOidcClients({
      store,
      audit,
      onRemoved: async (clientId) => { ended.push(clientId) },
      removals: { mark: async () => { throw new Error('Redis is down') }, marked: async () => false }
    })
    t.match(await rejection(clients.remove(client.clientId, ACTOR)), { message: 'Redis is down' })
    t.same(ended, [], 'no token ended')
    t.match(await clients.metadataOf(client.clientId), { client_id: client.clientId }, 'still registered')
    t.same((await store.list()).map((row) => row.clientId), [client.clientId], 'and listed')
  })
}

t.test('on Postgres', async (t) => {
  clientsContract(t, async (t) => patientPostgres(await freshPostgresDatabase(t)))
})

t.test('on PGlite', async (t) => {
  clientsContract(t, async () => await freshPglite())
})
