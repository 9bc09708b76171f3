import t, { type Test } from 'tap'
import type { Redis } from 'ioredis'
import { Writable } from 'node:stream'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { buildInternalApp } from '../../src/app/internal-listener.js'
import { buildTestApp, type BackendKind, type TestApp } from '../support/app.js'
import { keysUnder } from '../../support/redis.js'
import type { Config } from '../../src/config/config.js'
import { UnavailableError } from '../../src/errors/status.js'
import { createApiKeys } from '../../src/api-keys/api-keys.js'
import { createSqlApiKeyStore } from '../../src/api-keys/store.js'
import { createSqlAuditLog } from '../../src/core/stores/audit-log.js'
import { createMemoryTokenStore } from '../../src/core/stores/memory/token-store.js'
import { createSqlUserStore } from '../../src/core/stores/user-store.js'
import { freshPglite } from '../support/pglite.js'
import { rejection } from '../support/rejection.js'
import { generateApiKey, hashApiKey, isKeyIdShaped, newKeyId } from '../../src/core/api-key-secret.js'

/*
 * API keys end to end through inject, on Postgres + Redis and on the embedded default:
 * made by the admin API, accepted where a token is checked (not as the cookie, not where a token
 * is made or an account changed), ended at once by revocation, disabling and revoke-all but not by
 * a password change, re-seeded when Redis loses its record, and never stored or logged in the clear.
 */

const KEY = 'admin-key-for-key-tests-0123456789-abcdef'
const PASSWORD = 'a long enough passphrase 1'
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
const KEY_SHAPE = /^atsk_[A-Za-z0-9_-]{45}$/
const INTROSPECTION_SECRET = 'introspection secret 0123456789'
const BASIC = `Basic ${Buffer.from(`gw:${encodeURIComponent(INTROSPECTION_SECRET)}`).toString('base64')}`

interface Setup {
  test: TestApp
  app: FastifyInstance
  internal: FastifyInstance
  lines: string[]
  admin (method: InjectOptions['method'], url: string, body?: unknown): Promise<{ status: number, body: Record<string, unknown> }>
  authenticate (secret: string, how?: 'path' | 'param' | 'bearer' | 'cookie'): Promise<{ status: number, body: Record<string, unknown> }>
}

async function setup (t: Test, kind: BackendKind, overrides: Partial<Config> = {}): Promise<Setup> {
  const lines: string[] = []
  const logStream = new Writable({ write (chunk: Buffer, _encoding, done) { lines.push(chunk.toString()); done() } })
  const test = await buildTestApp(t, kind, { adminKey: KEY, logLevel: 'info', introspectionClients: [{ id: 'gw', secret: INTROSPECTION_SECRET }], ...overrides }, { logStream })
  const { app, config } = test
  await app.ready()
  const internal = await buildInternalApp(app, config)
  t.teardown(async () => { await internal.close() })
  return {
    test,
    app,
    internal,
    lines,
    async admin (method, url, body) {
      const res = await internal.inject({
        method,
        url,
        headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { payload: JSON.stringify(body) })
      })
      return { status: res.statusCode, body: res.json() }
    },
    async authenticate (secret, how = 'bearer') {
      const options: InjectOptions = how === 'path'
        ? { method: 'GET', url: `/auth/Authenticate/${secret}` }
        : how === 'param'
          ? { method: 'GET', url: `/auth/Authenticate?token=${secret}` }
          : how === 'bearer'
            ? { method: 'GET', url: '/auth/Authenticate', headers: { authorization: `Bearer ${secret}` } }
            : { method: 'GET', url: '/auth/Authenticate', headers: { cookie: `AuthToken1=${secret}` } }
      const res = await app.inject(options)
      return { status: res.statusCode, body: res.json() }
    }
  }
}

/** The token store loses every record (a Redis restart without its data, or the process's map). */
async function loseTokenStore (s: Setup, keep: string): Promise<void> {
  if (s.test.redisStore !== undefined && s.test.redisPrefix !== undefined) {
    const keys = await keysUnder(s.test.redisStore.redis as Redis, s.test.redisPrefix)
    if (keys.length > 0) await s.test.redisStore.redis.del(...keys)
  } else {
    const store = s.test.tokens
    await store.terminate(hashApiKey(keep))
    // The in-process store: its record gone as a restart would take it (terminate does not touch keys' records).
    await (store as unknown as { close: () => Promise<void> }).close()
  }
}

async function newKey (s: Setup, username: string, body: Record<string, unknown> = { name: 'ci' }): Promise<{ id: string, secret: string }> {
  const made = await s.admin('POST', `/admin/users/${username}/keys`, body)
  if (made.status !== 200) throw new Error(`key not made: ${JSON.stringify(made.body)}`)
  return { id: (made.body.key as { id: string }).id, secret: made.body.secret as string }
}

function keyContract (t: Test, kind: BackendKind): void {
  t.test('made by the admin API, shown once; works at Authenticate, verify, introspect; never as the cookie', async (t) => {
    const s = await setup(t, kind)
    t.equal((await s.admin('POST', '/admin/users', { username: 'billing', kind: 'service' })).status, 200)
    const made = await s.admin('POST', '/admin/users/billing/keys', { name: 'prod', expires_in_days: 30 })
    t.equal(made.status, 200)
    const secret = made.body.secret as string
    t.match(secret, KEY_SHAPE, 'atsk_ and 45 base64url characters')
    const key = made.body.key as { id: string, name: string, created: string, expiration_date: string, last_used: null }
    t.same(Object.keys(key).sort(), ['created', 'expiration_date', 'id', 'last_used', 'name'])
    t.equal(key.name, 'prod')
    t.equal(key.last_used, null)
    const days = (Date.parse(`${key.expiration_date}Z`) - Date.parse(`${key.created}Z`)) / 86_400_000
    t.ok(Math.abs(days - 30) < 0.01, `30 days (${days})`)

    for (const how of ['path', 'param', 'bearer'] as const) {
      const answer = await s.authenticate(secret, how)
      t.equal(answer.status, 200, `works by ${how}`)
      t.match(answer.body, { status: 0, message: 'Success', username: 'billing', kind: 'api_key', key_id: key.id, expiration_date: key.expiration_date })
    }
    const cookie = await s.authenticate(secret, 'cookie')
    t.same([cookie.status, cookie.body], [403, { status: 403, message: 'Unauthorized' }], 'never as the AuthToken1 cookie')

    const verified = await s.app.inject({ method: 'GET', url: '/auth/verify', headers: { authorization: `Bearer ${secret}` } })
    t.equal(verified.statusCode, 200)
    t.equal(verified.headers['x-auth-kind'], 'api_key')
    t.equal(verified.headers['x-auth-user'], 'billing')
    t.equal((await s.app.inject({ method: 'GET', url: '/auth/verify', headers: { cookie: `AuthToken1=${secret}` } })).statusCode, 401, 'verify: not as the cookie')
    const introspected = await s.app.inject({ method: 'POST', url: '/auth/introspect', headers: { ...FORM, authorization: BASIC }, payload: `token=${secret}` })
    t.equal(introspected.statusCode, 200)
    t.match(introspected.json(), { active: true, username: 'billing', kind: 'api_key', key_id: key.id, exp: Date.parse(`${key.expiration_date}Z`) / 1000 })

    const listed = await s.admin('GET', '/admin/users/billing/keys')
    t.same((listed.body.keys as Array<{ id: string }>).map((k) => k.id), [key.id])
    t.notOk(JSON.stringify(listed.body).includes(secret), 'a listing never shows the secret')

    t.match(await s.admin('POST', '/admin/users/billing/keys', { name: 'x', expires_in_days: 366 }), { status: 400, body: { detail: 'expires_in_days must be a whole number from 1 to 365' } })
    t.match(await s.admin('POST', '/admin/users/billing/keys', { name: 'x', expires_in_days: 0 }), { status: 400 })
    t.match(await s.admin('POST', '/admin/users/billing/keys', { name: ' \n ' }), { status: 400 })
    t.match(await s.admin('POST', '/admin/users/nobody/keys', { name: 'x' }), { status: 404, body: { detail: 'no such account' } })
    const metrics = await s.app.metrics.registry.metrics()
    t.match(metrics, /^auth_api_keys_expiring_soon 0$/m, 'the 30-day key is not expiring soon')
    await newKey(s, 'billing', { name: 'short', expires_in_days: 3 })
    t.match(await s.app.metrics.registry.metrics(), /^auth_api_keys_expiring_soon 1$/m, 'a 3-day key is')
    const defaulted = await s.admin('POST', '/admin/users/billing/keys', { name: 'default' })
    const life = defaulted.body.key as { created: string, expiration_date: string }
    t.ok(Math.abs((Date.parse(`${life.expiration_date}Z`) - Date.parse(`${life.created}Z`)) / 86_400_000 - 90) < 0.01, '90 days by default')
  })

  t.test('a Login token says kind token; a key works nowhere a token is made or an account changed', async (t) => {
    const s = await setup(t, kind)
    await s.test.addUser('ann', PASSWORD)
    const login = await s.app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: new URLSearchParams({ username: 'ann', password: PASSWORD }).toString() })
    const token = (login.json() as { token: string }).token
    t.match((await s.authenticate(token)).body, { status: 0, kind: 'token' })
    t.equal((await s.app.inject({ method: 'GET', url: '/auth/verify', headers: { authorization: `Bearer ${token}` } })).headers['x-auth-kind'], 'token')

    const { secret } = await newKey(s, 'ann')
    t.equal((await s.authenticate(secret)).status, 200, 'a person\'s own key works')
    const bearer = { authorization: `Bearer ${secret}` }
    t.equal((await s.app.inject({ method: 'GET', url: '/auth/sessions', headers: bearer })).statusCode, 403, 'not at /auth/sessions')
    t.equal((await s.app.inject({
      method: 'POST', url: '/auth/Password', headers: { ...bearer, 'content-type': 'application/json' }, payload: { current_password: PASSWORD, new_password: 'another passphrase 22' }
    })).statusCode, 403, 'not at /auth/Password')
    const refresh = await s.app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: new URLSearchParams({ username: 'ann', password: PASSWORD, token: secret }).toString() })
    t.not((refresh.json() as { token: string }).token, secret, 'Login never refreshes a key: a new token')
    await s.app.inject({ method: 'GET', url: '/auth/Logout', headers: bearer })
    t.equal((await s.authenticate(secret)).status, 200, 'Logout does not end a key: the key routes do')
  })

  t.test('self-service /auth/keys with the caller\'s Login token; another\'s id and an unknown one: 403 alike; last_used written coarsely', async (t) => {
    const s = await setup(t, kind)
    await s.test.addUser('cy', PASSWORD)
    await s.test.addUser('di', PASSWORD)
    const tokenOf = async (username: string): Promise<string> => {
      const login = await s.app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: new URLSearchParams({ username, password: PASSWORD }).toString() })
      return (login.json() as { token: string }).token
    }
    const cy = { authorization: `Bearer ${await tokenOf('cy')}` }
    const di = { authorization: `Bearer ${await tokenOf('di')}` }
    const made = await s.app.inject({ method: 'POST', url: '/auth/keys', headers: { ...cy, 'content-type': 'application/json' }, payload: { name: 'laptop', expires_in_days: 7, current_password: PASSWORD } })
    t.equal(made.statusCode, 200)
    const { key, secret } = made.json() as { key: { id: string, last_used: string | null }, secret: string }
    t.match(secret, KEY_SHAPE)
    t.equal((await s.authenticate(secret)).status, 200)
    const listed = await s.app.inject({ method: 'GET', url: '/auth/keys', headers: cy })
    t.same((listed.json() as { keys: Array<{ id: string }> }).keys.map((k) => k.id), [key.id])
    t.same((await s.app.inject({ method: 'GET', url: '/auth/keys', headers: di })).json(), { status: 0, message: 'Success', keys: [], next_cursor: null }, 'another account sees none of them')

    const keyAsCaller = { authorization: `Bearer ${secret}` }
    t.equal((await s.app.inject({ method: 'GET', url: '/auth/keys', headers: keyAsCaller })).statusCode, 403, 'a key cannot list keys')
    t.equal((await s.app.inject({ method: 'POST', url: '/auth/keys', headers: { ...keyAsCaller, 'content-type': 'application/json' }, payload: { name: 'x', current_password: PASSWORD } })).statusCode, 403, 'a key cannot make keys')
    t.equal((await s.app.inject({ method: 'DELETE', url: `/auth/keys/${key.id}`, headers: keyAsCaller })).statusCode, 403, 'a key cannot end keys')

    const other = await s.app.inject({ method: 'DELETE', url: `/auth/keys/${key.id}`, headers: di })
    const unknown = await s.app.inject({ method: 'DELETE', url: '/auth/keys/AAAAAAAAAAAAAAAA', headers: di })
    t.equal(other.statusCode, 403)
    t.equal(other.body, unknown.body, 'another account\'s id and an unknown one: the same answer')
    t.equal((await s.authenticate(secret)).status, 200, 'still working')

    // last_used: noted in memory on the answer's path, written by the minute's flush.
    await s.app.apiKeys.flush()
    const used = (await s.app.inject({ method: 'GET', url: '/auth/keys', headers: cy })).json() as { keys: Array<{ last_used: string | null }> }
    t.match(used.keys[0]?.last_used, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/, 'last_used written')

    const ended = await s.app.inject({ method: 'DELETE', url: `/auth/keys/${key.id}`, headers: cy })
    t.equal(ended.statusCode, 200)
    t.equal((await s.authenticate(secret)).status, 403, 'ended by its owner')
  })

  t.test('revocation ends it at once; disable and revoke-all end keys; a password change does not', async (t) => {
    const s = await setup(t, kind)
    await s.test.addUser('bob', PASSWORD)
    const first = await newKey(s, 'bob')
    const second = await newKey(s, 'bob')
    const ended = await s.admin('DELETE', `/admin/keys/${first.id}`)
    t.match(ended, { status: 200, body: { status: 0, key: { id: first.id } } })
    t.equal((await s.authenticate(first.secret)).status, 403, 'the revoked key is refused at once')
    t.equal((await s.authenticate(second.secret)).status, 200, 'the other key stays')
    t.match(await s.admin('DELETE', '/admin/keys/AAAAAAAAAAAAAAAA'), { status: 404, body: { detail: 'no such key' } })

    t.equal((await s.admin('PATCH', '/admin/users/bob', { password: 'a new long passphrase 3' })).status, 200)
    t.equal((await s.authenticate(second.secret)).status, 200, 'a password change leaves keys working')

    t.equal((await s.admin('DELETE', '/admin/users/bob/sessions')).status, 200)
    t.equal((await s.authenticate(second.secret)).status, 403, 'revoke-all ends keys')
    t.same((await s.admin('GET', '/admin/users/bob/keys')).body.keys, [])

    const third = await newKey(s, 'bob')
    t.equal((await s.authenticate(third.secret)).status, 200)
    t.equal((await s.admin('PATCH', '/admin/users/bob', { disabled: true })).status, 200)
    t.equal((await s.authenticate(third.secret)).status, 403, 'disabling ends keys')
    t.match(await s.admin('POST', '/admin/users/bob/keys', { name: 'x' }), { status: 409, body: { detail: 'the account is disabled' } })
    t.equal((await s.admin('PATCH', '/admin/users/bob', { disabled: false })).status, 200)
    t.equal((await s.authenticate(third.secret)).status, 403, 'enabling again brings no key back')

    const events = await s.admin('GET', '/admin/events?user=bob')
    const kinds = (events.body.events as Array<{ event: string, outcome: string }>).filter((e) => e.event.startsWith('key.'))
    t.same(kinds.map((e) => e.event), ['key.created', 'key.created', 'key.revoked', 'key.revoked', 'key.created', 'key.revoked'])
  })

  t.test('a record the token store lost is re-seeded from Postgres while the key is live, never after it ended', async (t) => {
    const s = await setup(t, kind)
    await s.admin('POST', '/admin/users', { username: 'svc', kind: 'service' })
    const live = await newKey(s, 'svc')
    const revoked = await newKey(s, 'svc')
    await s.admin('DELETE', `/admin/keys/${revoked.id}`)
    await loseTokenStore(s, live.secret)
    t.equal((await s.authenticate(live.secret)).status, 200, 're-seeded: the live key works')
    t.equal((await s.authenticate(revoked.secret)).status, 403, 'the ended key stays ended')
    const random = `atsk_${'A'.repeat(45)}`
    t.equal((await s.authenticate(random)).status, 403, 'an unknown atsk_ string is refused')
  })

  t.test('after the token store lost its records, one client sending unknown atsk_ values holds back no other client\'s key: 200 or 503, never 403', async (t) => {
    const s = await setup(t, kind)
    await s.admin('POST', '/admin/users', { username: 'svc', kind: 'service' })
    const theirs = await newKey(s, 'svc')
    const spammers = await newKey(s, 'svc')
    await loseTokenStore(s, theirs.secret)
    const from = async (remoteAddress: string, secret: string) =>
      await s.app.inject({ method: 'GET', url: '/auth/Authenticate', remoteAddress, headers: { authorization: `Bearer ${secret}` } })
    // Far more unknown values than any budget of look-ups (each is one Postgres look-up unless
    // refused), with another client's request and the spammer's own real key sent behind them.
    const spam = (): Array<Promise<LightMyRequestResponse>> => Array.from({ length: 150 }, async () => await from('203.0.113.7', generateApiKey('1')))
    const first = await Promise.all([...spam(), from('198.51.100.4', theirs.secret)])
    const other = first.pop()
    t.ok(first.every((answer) => answer.statusCode === 403 || answer.statusCode === 503), 'the spam: unknown (403) or refused for now (503)')
    t.ok(first.some((answer) => answer.statusCode === 503), 'the spamming client ran out of its own budget')
    t.equal(other?.statusCode, 200, 'another client\'s real key is recovered')
    t.match(other?.json(), { status: 0, kind: 'api_key', key_id: theirs.id })
    const verified = await s.app.inject({ method: 'GET', url: '/auth/verify', remoteAddress: '198.51.100.9', headers: { authorization: `Bearer ${theirs.secret}` } })
    t.equal(verified.statusCode, 200, 'and found from then on, by anyone')

    // The spammer's own real key, behind its spam: not yet recovered, perhaps, but never called unknown.
    const own = (await Promise.all([...spam(), from('203.0.113.7', spammers.secret)])).pop()
    t.not(own?.statusCode, 403, 'a key that exists is never answered 403 while it cannot be looked up')
    if (own?.statusCode === 503) {
      t.equal(own.headers['retry-after'], '1', '503 says when to retry')
      t.same(own.json(), { status: 503, message: 'Service Unavailable' })
    }
    await Promise.all(spam())
    const introspected = await s.app.inject({ method: 'POST', url: '/auth/introspect', remoteAddress: '203.0.113.7', headers: { ...FORM, authorization: BASIC }, payload: `token=${spammers.secret}` })
    t.not(introspected.json<{ active: boolean }>().active, false, 'introspection: 503 or active, never inactive')
    await Promise.all(spam())
    const refused = await s.app.inject({ method: 'GET', url: '/auth/verify', remoteAddress: '203.0.113.7', headers: { authorization: `Bearer ${spammers.secret}` } })
    t.not(refused.statusCode, 401, 'verify: 503 or 200, never 401')
  })

  t.test('an account holds at most AUTH_API_KEYS_PER_ACCOUNT live keys, concurrent creates included', async (t) => {
    const s = await setup(t, kind, { apiKeysPerAccount: 3 })
    await s.admin('POST', '/admin/users', { username: 'many', kind: 'service' })
    const made = await Promise.all(Array.from({ length: 12 }, async (_, i) => await s.admin('POST', '/admin/users/many/keys', { name: `k${i}` })))
    t.equal(made.filter((answer) => answer.status === 200).length, 3, 'three of twelve concurrent creates made a key')
    for (const answer of made.filter((answer) => answer.status !== 200)) {
      t.same(answer, { status: 400, body: { status: 400, message: 'Bad Request', detail: 'the account holds 3 live API keys, the most it may (AUTH_API_KEYS_PER_ACCOUNT)' } })
    }
    const listed = (await s.admin('GET', '/admin/users/many/keys')).body.keys as Array<{ id: string }>
    t.equal(listed.length, 3, 'three live keys')
    const { rows } = await s.test.database.query<{ n: string | number }>('SELECT count(*) AS n FROM api_keys')
    t.equal(Number(rows[0]?.n), 3, 'no row beyond them either')
    t.equal((await s.admin('DELETE', `/admin/keys/${listed[0]?.id ?? ''}`)).status, 200)
    t.equal((await s.admin('POST', '/admin/users/many/keys', { name: 'after' })).status, 200, 'an ended key frees its place')
    t.equal((await s.admin('POST', '/admin/users/many/keys', { name: 'over' })).status, 400)
    await s.test.addUser('other', PASSWORD)
    t.equal((await s.admin('POST', '/admin/users/other/keys', { name: 'own' })).status, 200, 'the cap is per account')
  })

  t.test('key lists are paged like users: limit, cursor -> next_cursor, oldest first', async (t) => {
    const s = await setup(t, kind)
    await s.test.addUser('pager', PASSWORD)
    const ids: string[] = []
    for (let i = 0; i < 5; i++) ids.push((await newKey(s, 'pager', { name: `k${i}` })).id)
    const walk = async (get: (query: string) => Promise<{ status: number, body: Record<string, unknown> }>): Promise<string[][]> => {
      const pages: string[][] = []
      let cursor: unknown = null
      do {
        const page = await get(`limit=2${typeof cursor === 'string' ? `&cursor=${cursor}` : ''}`)
        t.equal(page.status, 200)
        pages.push((page.body.keys as Array<{ id: string }>).map((key) => key.id))
        cursor = page.body.next_cursor
        t.ok(cursor === null || typeof cursor === 'string', 'next_cursor: a string or null')
      } while (cursor !== null && pages.length < 10)
      return pages
    }
    const expected = [ids.slice(0, 2), ids.slice(2, 4), ids.slice(4)]
    t.same(await walk(async (query) => await s.admin('GET', `/admin/users/pager/keys?${query}`)), expected, 'admin: three pages in order of creation')
    const login = await s.app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: new URLSearchParams({ username: 'pager', password: PASSWORD }).toString() })
    const authorization = `Bearer ${(login.json() as { token: string }).token}`
    const self = async (query: string) => {
      const res = await s.app.inject({ method: 'GET', url: `/auth/keys?${query}`, headers: { authorization } })
      return { status: res.statusCode, body: res.json() }
    }
    t.same(await walk(self), expected, 'self-service: the same pages')
    t.match(await self(''), { status: 200, body: { next_cursor: null } }, 'one page when they fit (default 100)')
    t.match(await self('cursor=%%%'), { status: 400 })
    t.match(await self('cursor=bm90IGEga2V5'), { status: 400, body: { detail: 'cursor is not valid' } })
    t.match(await self('limit=0'), { status: 400 })
    t.match(await s.admin('GET', '/admin/users/pager/keys?limit=1001'), { status: 400 })
  })

  t.test('the secret is in no Redis key or value, no Postgres row and no log line', async (t) => {
    const s = await setup(t, kind)
    await s.admin('POST', '/admin/users', { username: 'scan', kind: 'service' })
    const { id, secret } = await newKey(s, 'scan')
    await s.authenticate(secret, 'path')
    await s.authenticate(secret, 'param')
    await s.app.inject({ method: 'POST', url: '/auth/introspect', headers: { ...FORM, authorization: BASIC }, payload: `token=${secret}` })
    await s.admin('DELETE', `/admin/keys/${id}`)
    await s.app.apiKeys.flush()
    const random = secret.slice(7)
    if (s.test.redisStore !== undefined && s.test.redisPrefix !== undefined) {
      const redis = s.test.redisStore.redis
      for (const key of await keysUnder(redis as Redis, s.test.redisPrefix)) {
        t.notOk(key.includes(random), `not in the key name ${key}`)
        const type = await redis.type(key)
        const dump = type === 'string' ? await redis.get(key) : type === 'zset' ? (await redis.zrange(key, '0', '-1')).join(' ') : ''
        t.notOk((dump ?? '').includes(random), `not in the value of ${key}`)
      }
    }
    for (const table of ['api_keys', 'auth_events', 'users', 'sessions']) {
      const { rows } = await s.test.database.query<Record<string, unknown>>(`SELECT * FROM ${table}`)
      t.notOk(JSON.stringify(rows).includes(random), `not in ${table}`)
    }
    const { rows } = await s.test.database.query<{ key_hash: string }>('SELECT key_hash FROM api_keys')
    t.same(rows.map((row) => row.key_hash), [hashApiKey(secret)], 'only its hash is stored')
    t.ok(s.lines.length > 0, 'log lines were captured')
    t.notOk(s.lines.some((line) => line.includes(random)), 'in no log line')
  })
}

t.test('Postgres and Redis', async (t) => { keyContract(t, 'real') })
t.test('embedded default', async (t) => { keyContract(t, 'embedded') })

t.test('a key id never starts with a dash: typed after `keys revoke`, it would read as an option', async (t) => {
  const ids = Array.from({ length: 5000 }, () => newKeyId())
  t.same(ids.filter((id) => id.startsWith('-')), [], 'none of 5000 (base64url\'s 64th character is the dash: one in 64 began with it)')
  t.ok(ids.every(isKeyIdShaped), 'each 16 base64url characters')
  t.equal(new Set(ids).size, ids.length, 'all distinct')
})

t.test('a revoke-all whose token-store step failed (503) is finished by the next: the keys it ended in Postgres are ended again', async (t) => {
  const database = await freshPglite({ migrated: true })
  t.teardown(async () => { await database.close() })
  const tokens = createMemoryTokenStore({ denyTtlMs: 60_000 })
  let failNext = true
  // The in-process store with its batch refused once, as a Redis that cannot acknowledge it.
  const flaky = {
    seedKey: tokens.seedKey,
    endKey: tokens.endKey,
    async endKeys (keyHashes: readonly string[]) {
      if (failNext) {
        failNext = false
        throw new UnavailableError('redis')
      }
      await tokens.endKeys(keyHashes)
    }
  }
  const audit = createSqlAuditLog(database)
  const apiKeys = createApiKeys({ store: createSqlApiKeyStore(database), tokens: flaky, audit, maxDays: 365, flushEveryMs: 0 })
  t.teardown(async () => { await apiKeys.close() })
  const account = await createSqlUserStore(database).create({ username: 'svc', passwordHash: null, federated: false, kind: 'service' })
  const made = [await apiKeys.create(account, 'a', undefined, {}), await apiKeys.create(account, 'b', undefined, {})]
  const hashes = made.map(({ secret }) => hashApiKey(secret))
  t.match(await rejection(apiKeys.endAccount(account, {}, 'revoke-all')), { status: 503 }, 'the first revoke-all: 503')
  t.ok((await Promise.all(hashes.map(async (hash) => await tokens.find(hash)))).every((record) => record !== null), 'the records still live in the store')
  t.equal(await apiKeys.endAccount(account, {}, 'revoke-all'), 0, 'the retry: no key left live in Postgres')
  t.same(await Promise.all(hashes.map(async (hash) => await tokens.find(hash))), [null, null], 'and yet both records ended')
  await audit.flush()
  const outcomes = (await audit.list({ username: 'svc' })).filter((event) => event.event === 'key.revoked').map((event) => event.outcome.split(':')[0])
  t.same(outcomes, ['revoke-all-incomplete', 'revoke-all-incomplete'], 'the events say the first was not acknowledged')
})
