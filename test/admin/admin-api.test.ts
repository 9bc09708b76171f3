import t, { type Test } from 'tap'
import { createHash } from 'node:crypto'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { buildInternalApp } from '../../src/app/internal-listener.js'
import type { Config } from '../../src/config/config.js'
import { buildTestApp, type BackendKind } from '../support/app.js'
import { waitFor } from '../../support/processes.js'

/*
 * The admin API (api-contract.md "Admin API") on the internal app as the service
 * builds it, on Postgres + Redis and on the embedded default: one suite for both.
 */

const KEY = 'admin-key-for-tests-0123456789-abcdefghij'
const PASSWORD = 'a long enough passphrase 1'
const OTHER_PASSWORD = 'another long passphrase 2'
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
/** How the audit trail names KEY: `key:` and the first 8 hex digits of its SHA-256. */
const KEY_FINGERPRINT = `key:${createHash('sha256').update(KEY).digest('hex').slice(0, 8)}`

interface Admin {
  app: FastifyInstance
  config: Config
  internal: FastifyInstance
  /** An admin request with the key, from 127.0.0.1 unless told. */
  call (method: InjectOptions['method'], url: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number, body: Record<string, unknown>, headers: Record<string, unknown> }>
  login (username: string, password: string): Promise<{ status: number, token?: string }>
  authenticate (token: string | undefined): Promise<number>
}

async function adminFor (t: Test, kind: BackendKind, overrides: Partial<Config> = {}): Promise<Admin> {
  const { app, config } = await buildTestApp(t, kind, { adminKey: KEY, ...overrides })
  await app.ready()
  const internal = await buildInternalApp(app, config)
  t.teardown(async () => { await internal.close() })
  return {
    app,
    config,
    internal,
    async call (method, url, body, headers = {}) {
      const res = await internal.inject({
        method,
        url,
        headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        ...(body === undefined ? {} : { payload: JSON.stringify(body) })
      })
      return { status: res.statusCode, body: res.json(), headers: res.headers }
    },
    async login (username, password) {
      const res = await app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: new URLSearchParams({ username, password }).toString() })
      return res.json()
    },
    async authenticate (token) {
      return (await app.inject({ method: 'GET', url: `/auth/Authenticate?token=${encodeURIComponent(token ?? '')}` })).statusCode
    }
  }
}

const DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/

function adminContract (t: Test, kind: BackendKind): void {
  t.test('create, show, list: the user shape; the password policy applies', async (t) => {
    const admin = await adminFor(t, kind)
    const created = await admin.call('POST', '/admin/users', { username: 'Ann', password: PASSWORD })
    t.equal(created.status, 200)
    t.match(created.body, { status: 0, message: 'Success', user: { username: 'ann', federated: false, disabled: false, locked_until: null, last_login: null } })
    t.match((created.body.user as { created: string }).created, DATE, 'created in the expiration_date form')
    t.same(Object.keys(created.body.user as object).sort(), ['created', 'directory_groups', 'disabled', 'email', 'federated', 'groups', 'kind', 'last_login', 'locked_until', 'totp', 'username'])
    t.match(created.body.user, { kind: 'person', totp: false }, 'a person by default')
    t.equal((await admin.login('ann', PASSWORD)).status, 0, 'Login works at once')
    // The Login writes last_login off its answer's path (auth.ts): wait for it, a busy machine may be slow.
    let shown = await admin.call('GET', '/admin/users/ann')
    await waitFor('last_login written', async () => {
      shown = await admin.call('GET', '/admin/users/ann')
      return (shown.body.user as { last_login: string | null } | undefined)?.last_login !== null
    }, { timeoutMs: 10_000, everyMs: 50 }).catch(() => {})
    t.equal(shown.status, 200)
    t.match((shown.body.user as { last_login: string }).last_login, DATE, 'last_login written by the Login')

    t.match(await admin.call('POST', '/admin/users', { username: 'ann', password: PASSWORD }), { status: 409, body: { status: 409, detail: 'username is taken' } })
    t.match(await admin.call('POST', '/admin/users', { username: 'bob', password: 'short' }), { status: 400, body: { status: 400, message: 'Bad Request', detail: 'password is shorter than 8 characters' } })
    t.match(await admin.call('POST', '/admin/users', { username: 'bob' }), { status: 400, body: { detail: 'password is required' } })
    t.match(await admin.call('POST', '/admin/users', { password: PASSWORD }), { status: 400, body: { detail: 'username is required' } })
    t.match(await admin.call('POST', '/admin/users', { username: 'bob', password: PASSWORD, role: 'x' }), { status: 400, body: { status: 400 } }, 'an unknown field')
    t.match(await admin.call('POST', '/admin/users', { username: 'fed', federated: true }), { status: 200, body: { user: { username: 'fed', federated: true } } }, 'a federated account needs no password')
    t.match(await admin.call('GET', '/admin/users/nobody'), { status: 404, body: { status: 404, message: 'Not Found', detail: 'no such account' } })
  })

  t.test('a service account: kind service, no password, never a Login (answered as a wrong password)', async (t) => {
    const admin = await adminFor(t, kind)
    const created = await admin.call('POST', '/admin/users', { username: 'Billing', kind: 'service' })
    t.match(created, { status: 200, body: { status: 0, user: { username: 'billing', kind: 'service', totp: false, federated: false, disabled: false } } })
    t.match(await admin.call('GET', '/admin/users/billing'), { status: 200, body: { user: { kind: 'service' } } })
    t.match(await admin.call('POST', '/admin/users', { username: 'svc2', kind: 'service', password: PASSWORD }), { status: 400, body: { detail: 'a service account has no password (it authenticates with API keys)' } })
    t.match(await admin.call('POST', '/admin/users', { username: 'svc3', kind: 'service', federated: true }), { status: 400, body: { detail: 'a service account cannot be federated' } })
    t.match(await admin.call('POST', '/admin/users', { username: 'svc4', kind: 'robot' }), { status: 400 }, 'an unknown kind')
    t.match(await admin.call('PATCH', '/admin/users/billing', { password: PASSWORD }), { status: 400, body: { detail: 'a service account has no password (it authenticates with API keys)' } })

    // Login of a service account: the same answer as a wrong password (and as an unknown name).
    const form = (username: string) => ({ method: 'POST' as const, url: '/auth/Login', headers: FORM, payload: new URLSearchParams({ username, password: PASSWORD }).toString() })
    const service = await admin.app.inject(form('billing'))
    const unknown = await admin.app.inject(form('nobody-at-all'))
    t.equal(service.statusCode, 401)
    t.equal(service.body, unknown.body, 'byte-identical to an unknown user\'s')
    t.same(service.json(), { status: 701, message: 'Login Failed' })
    t.equal(service.headers['set-cookie'], undefined)
    const failures = await admin.call('GET', '/admin/events?user=billing&event=login.failure')
    t.match(failures.body.events, [{ event: 'login.failure', outcome: 'wrong-password' }], 'counted and audited as a wrong password')
  })

  t.test('list pages by username: limit, cursor, next_cursor; a bad cursor or limit is a 400', async (t) => {
    const admin = await adminFor(t, kind)
    for (const name of ['e', 'b', 'd', 'a', 'c']) t.equal((await admin.call('POST', '/admin/users', { username: name, password: PASSWORD })).status, 200)
    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const page = await admin.call('GET', `/admin/users?limit=2${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`)
      t.equal(page.status, 200)
      pages++
      seen.push(...(page.body.users as Array<{ username: string }>).map((u) => u.username))
      cursor = page.body.next_cursor as string | null
    } while (cursor !== null && pages < 10)
    t.same(seen, ['a', 'b', 'c', 'd', 'e'], 'every account once, in order')
    t.equal(pages, 3)
    const all = await admin.call('GET', '/admin/users')
    t.equal((all.body.users as unknown[]).length, 5, 'default limit covers them')
    t.equal(all.body.next_cursor, null)
    t.match(await admin.call('GET', '/admin/users?cursor=%%%'), { status: 400, body: { detail: 'cursor is not valid' } })
    t.match(await admin.call('GET', '/admin/users?limit=0'), { status: 400, body: { detail: 'limit is not valid' } })
    t.match(await admin.call('GET', '/admin/users?limit=abc'), { status: 400, body: { detail: 'limit is not valid' } })
  })

  t.test('PATCH disabled and password: both end the account\'s sessions', async (t) => {
    const admin = await adminFor(t, kind)
    await admin.call('POST', '/admin/users', { username: 'carl', password: PASSWORD })
    const first = await admin.login('carl', PASSWORD)
    t.equal(await admin.authenticate(first.token), 200)
    const disabled = await admin.call('PATCH', '/admin/users/carl', { disabled: true })
    t.match(disabled, { status: 200, body: { status: 0, user: { disabled: true }, sessions_ended: 1 } })
    t.equal(await admin.authenticate(first.token), 403, 'its token ended')
    t.equal((await admin.login('carl', PASSWORD)).status, 701, 'a disabled account cannot log in')
    t.match(await admin.call('PATCH', '/admin/users/carl', { disabled: false }), { status: 200, body: { user: { disabled: false }, sessions_ended: 0 } })
    const second = await admin.login('carl', PASSWORD)
    t.equal(second.status, 0)
    t.match(await admin.call('PATCH', '/admin/users/carl', { password: 'weak' }), { status: 400, body: { detail: 'password is shorter than 8 characters' } })
    t.equal(await admin.authenticate(second.token), 200, 'a refused password changes nothing')
    t.match(await admin.call('PATCH', '/admin/users/carl', { password: OTHER_PASSWORD }), { status: 200, body: { sessions_ended: 1 } })
    t.equal(await admin.authenticate(second.token), 403, 'a new password ends its tokens')
    t.equal((await admin.login('carl', PASSWORD)).status, 701, 'the old password is gone')
    t.equal((await admin.login('carl', OTHER_PASSWORD)).status, 0, 'the new one works')
    t.match(await admin.call('PATCH', '/admin/users/carl', {}), { status: 400 }, 'an empty change')
    t.match(await admin.call('PATCH', '/admin/users/carl', { disabled: 'yes' }), { status: 400, body: { detail: 'disabled is not valid' } })
    t.match(await admin.call('PATCH', '/admin/users/nobody', { disabled: true }), { status: 404, body: { detail: 'no such account' } })
  })

  t.test('unlock lifts the lock failed logins set', async (t) => {
    const admin = await adminFor(t, kind, { maxFailedLogins: 3, lockoutSeconds: 600, maxLockoutSeconds: 600 })
    await admin.call('POST', '/admin/users', { username: 'dora', password: PASSWORD })
    for (let i = 0; i < 3; i++) t.equal((await admin.login('dora', 'wrong password')).status, 701)
    t.equal((await admin.login('dora', PASSWORD)).status, 429, 'locked: even the right password waits')
    const locked = await admin.call('GET', '/admin/users/dora')
    const until = Date.parse(`${(locked.body.user as { locked_until: string }).locked_until}Z`)
    t.ok(until > Date.now() + 590_000 && until < Date.now() + 601_000, `locked_until about ten minutes ahead (${String((locked.body.user as { locked_until: string }).locked_until)})`)
    t.match(await admin.call('POST', '/admin/users/dora/unlock'), { status: 200, body: { user: { username: 'dora', locked_until: null } } })
    t.equal((await admin.login('dora', PASSWORD)).status, 0, 'logs in at once')
    t.match(await admin.call('POST', '/admin/users/nobody/unlock'), { status: 404 })
  })

  t.test('delete ends the account\'s sessions; its audit events stay; the name can be used again', async (t) => {
    const admin = await adminFor(t, kind)
    await admin.call('POST', '/admin/users', { username: 'eve', password: PASSWORD })
    const { token } = await admin.login('eve', PASSWORD)
    t.match(await admin.call('DELETE', '/admin/users/eve'), { status: 200, body: { status: 0, message: 'Success', sessions_ended: 1 } })
    t.equal(await admin.authenticate(token), 403, 'its token ended')
    t.equal((await admin.login('eve', PASSWORD)).status, 701)
    t.match(await admin.call('GET', '/admin/users/eve'), { status: 404 })
    t.match(await admin.call('DELETE', '/admin/users/eve'), { status: 404, body: { detail: 'no such account' } })
    const events = await admin.call('GET', '/admin/events?user=eve')
    t.same((events.body.events as Array<{ event: string }>).map((e) => e.event), ['user.add', 'login.success', 'user.delete', 'login.failure'], 'its events stay, and the Login after the deletion failed')
    t.equal((await admin.call('POST', '/admin/users', { username: 'eve', password: OTHER_PASSWORD })).status, 200, 'a new eve')
    t.equal((await admin.login('eve', PASSWORD)).status, 701, 'the old password opens nothing')
  })

  t.test('events: filters, pages, every admin action named with its target, never a secret', async (t) => {
    const admin = await adminFor(t, kind)
    await admin.call('POST', '/admin/users', { username: 'fay', password: PASSWORD })
    await admin.call('POST', '/admin/users', { username: 'gus', password: PASSWORD })
    await admin.login('fay', PASSWORD)
    await admin.login('fay', 'wrong password')
    await admin.call('PATCH', '/admin/users/gus', { password: OTHER_PASSWORD })
    await admin.call('PATCH', '/admin/users/gus', { disabled: true })
    await admin.call('POST', '/admin/users/gus/unlock')
    const all = await admin.call('GET', '/admin/events')
    t.equal(all.status, 200)
    const events = all.body.events as Array<Record<string, string | null>>
    t.same(events.map((e) => [e.event, e.username]), [
      ['user.add', 'fay'], ['user.add', 'gus'], ['login.success', 'fay'], ['login.failure', 'fay'],
      ['user.passwd', 'gus'], ['user.disable', 'gus'], ['user.unlock', 'gus']
    ])
    t.same(Object.keys(events[0] ?? {}).sort(), ['account_id', 'actor', 'client_ip', 'credential', 'event', 'outcome', 'time', 'user_agent', 'username'])
    t.ok(events.every((e) => e.actor === null), 'the admin API acts as no account: actor null (the console names its person)')
    t.ok(events.filter((e) => e.event?.startsWith('user.')).every((e) => e.credential === KEY_FINGERPRINT && e.client_ip === '127.0.0.1'),
      'admin actions name the caller\'s address and the key, by its fingerprint')
    t.ok(events.filter((e) => e.event?.startsWith('login.')).every((e) => e.credential === null), 'a person\'s own requests name no credential')
    const text = JSON.stringify(all.body)
    t.notOk(text.includes(PASSWORD) || text.includes(OTHER_PASSWORD) || text.includes(KEY), 'no password or key in the trail')
    t.same(((await admin.call('GET', '/admin/events?user=FAY')).body.events as Array<{ event: string }>).map((e) => e.event),
      ['user.add', 'login.success', 'login.failure'], 'user, in canonical form')
    t.same(((await admin.call('GET', '/admin/events?event=login.failure')).body.events as Array<{ username: string }>).map((e) => e.username), ['fay'])
    t.same(((await admin.call('GET', `/admin/events?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).body.events as unknown[]), [], 'since')
    const paged: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const page = await admin.call('GET', `/admin/events?limit=3${cursor === null ? '' : `&cursor=${cursor}`}`)
      t.equal(page.status, 200)
      paged.push(...(page.body.events as Array<{ event: string }>).map((e) => e.event))
      cursor = page.body.next_cursor as string | null
      pages++
    } while (cursor !== null && pages < 10)
    t.same(paged, events.map((e) => e.event), 'pages of 3 give the same trail')
    t.match(await admin.call('GET', '/admin/events?event=nothing'), { status: 400, body: { detail: 'event is not valid' } })
    t.match(await admin.call('GET', '/admin/events?since=yesterday'), { status: 400, body: { detail: 'since is not valid' } })
    t.match(await admin.call('GET', '/admin/events?cursor=abc'), { status: 400, body: { detail: 'cursor is not valid' } })
  })

  t.test('the key: missing or wrong is a 401 with detail; wrong keys are counted per address and limited (429); the right key is never refused', async (t) => {
    const admin = await adminFor(t, kind, { maxFailedLogins: 3, lockoutSeconds: 600, maxLockoutSeconds: 600 })
    const from = (remoteAddress: string, authorization?: string) =>
      admin.internal.inject({ method: 'GET', url: '/admin/users', remoteAddress, headers: authorization === undefined ? {} : { authorization } })
    const missing = await from('192.0.2.10')
    t.equal(missing.statusCode, 401)
    t.same(missing.json(), { status: 401, message: 'Unauthorized', detail: 'Authorization: Bearer with the admin key is required' })
    t.match(missing.headers['www-authenticate'], /^Bearer/)
    // Any local process, or a browser's no-cors GET, can send these: they must not lock the administrator out.
    for (let i = 0; i < 12; i++) t.equal((await from('192.0.2.10')).statusCode, 401, `no key ${i + 2}: a plain 401`)
    t.equal((await from('192.0.2.10', `Bearer ${KEY}`)).statusCode, 200, 'after a dozen requests without a key, the right key works')
    t.equal((await from('192.0.2.10', 'Basic abc')).statusCode, 401, 'not Bearer: no key either')
    const wrong = await from('192.0.2.10', `Bearer ${KEY}x`)
    t.same(wrong.json(), { status: 401, message: 'Unauthorized', detail: 'the admin key is not valid' })
    t.equal((await from('192.0.2.10', 'Bearer wrong-2')).statusCode, 401)
    t.equal((await from('192.0.2.10', 'Bearer wrong-3')).statusCode, 401)
    const limited = await from('192.0.2.10', 'Bearer wrong-4')
    t.equal(limited.statusCode, 429, 'after 3 wrong keys the next wrong one waits')
    t.ok(Number(limited.headers['retry-after']) > 500, 'Retry-After says how long')
    t.equal((await from('192.0.2.10', `Bearer ${KEY}`)).statusCode, 200, 'the right key is never refused, from that address too')
    t.equal((await from('192.0.2.10')).statusCode, 401, 'no key from a limited address: still a plain 401')
    t.equal((await from('192.0.2.11', 'Bearer wrong')).statusCode, 401, 'another address is counted apart')
    t.equal((await admin.login('nobody', 'x')).status, 701, 'failed logins and wrong keys are counted apart')
    t.equal((await admin.call('POST', '/admin/users', { username: 'hal', password: PASSWORD })).status, 200)
    const events = await admin.call('GET', '/admin/events?event=admin.unauthorized', undefined, {})
    const outcomes = (events.body.events as Array<{ outcome: string, client_ip: string }>).map((e) => `${e.client_ip} ${e.outcome}`)
    t.same(outcomes, ['192.0.2.10 wrong-key', '192.0.2.10 wrong-key', '192.0.2.10 wrong-key', '192.0.2.10 wrong-key-limited', '192.0.2.11 wrong-key'],
      'each wrong key is an audit event; requests without a key are not')
    t.notOk(JSON.stringify(events.body).includes(KEY), 'the key sent is nowhere')
  })

  t.test('every change names its caller: address, user agent, and which credential (the key by fingerprint, or the local CLI\'s)', async (t) => {
    const admin = await adminFor(t, kind)
    const localKey = 'local-key-of-the-embedded-cli-0123456789abcdef'
    const local = await buildInternalApp(admin.app, admin.config, { localAdminKey: localKey })
    t.teardown(async () => { await local.close() })
    const by = { 'user-agent': 'curl/8.5.0' }
    await admin.call('POST', '/admin/users', { username: 'ian', password: PASSWORD }, { ...by })
    const { token } = await admin.login('ian', PASSWORD)
    const sessions = (await admin.call('GET', '/admin/users/ian/sessions')).body.sessions as Array<{ id: string }>
    const remote = await admin.internal.inject({ method: 'DELETE', url: `/admin/sessions/${sessions[0]?.id ?? ''}`, remoteAddress: '192.0.2.20', headers: { authorization: `Bearer ${KEY}`, ...by } })
    t.equal(remote.statusCode, 200)
    t.equal(await admin.authenticate(token), 403)
    const passwd = await admin.internal.inject({
      method: 'PATCH',
      url: '/admin/users/ian',
      remoteAddress: '192.0.2.21',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'user-agent': 'ops-script/2' },
      payload: JSON.stringify({ password: OTHER_PASSWORD })
    })
    t.equal(passwd.statusCode, 200)
    const unlocked = await local.inject({ method: 'POST', url: '/admin/users/ian/unlock', headers: { authorization: `Bearer ${localKey}`, 'user-agent': 'auth-token-service-admin-client/1' } })
    t.equal(unlocked.statusCode, 200, 'the local key opens it too')
    const events = (await admin.call('GET', '/admin/events?user=ian')).body.events as Array<Record<string, string | null>>
    t.same(events.filter((e) => e.event !== 'login.success').map((e) => [e.event, e.client_ip, e.user_agent, e.credential]), [
      ['user.add', '127.0.0.1', 'curl/8.5.0', KEY_FINGERPRINT],
      ['session.end', '192.0.2.20', 'curl/8.5.0', KEY_FINGERPRINT],
      ['user.passwd', '192.0.2.21', 'ops-script/2', KEY_FINGERPRINT],
      ['user.unlock', '127.0.0.1', 'auth-token-service-admin-client/1', 'local-cli']
    ])
    t.notOk(JSON.stringify(events).includes(KEY) || JSON.stringify(events).includes(localKey), 'no key in the trail')
  })

  t.test('sessions: list an account\'s, end one by id as a Logout would, end all', async (t) => {
    const admin = await adminFor(t, kind)
    await admin.call('POST', '/admin/users', { username: 'ida', password: PASSWORD })
    const first = await admin.login('ida', PASSWORD)
    const second = await admin.login('ida', PASSWORD)
    const third = await admin.login('ida', PASSWORD)
    const listed = await admin.call('GET', '/admin/users/ida/sessions')
    t.equal(listed.status, 200)
    const sessions = listed.body.sessions as Array<Record<string, unknown>>
    t.equal(sessions.length, 3)
    t.same(Object.keys(sessions[0] ?? {}).sort(), ['created', 'current', 'expiration_date', 'federated', 'id', 'ip', 'refreshed', 'user_agent'])
    t.ok(sessions.every((s) => s.current === false && s.federated === false && typeof s.id === 'string'), 'none is the caller\'s')
    t.match(sessions[0]?.expiration_date, DATE)
    const text = JSON.stringify(listed.body)
    t.notOk([first.token, second.token, third.token].some((token) => token !== undefined && text.includes(token)), 'no token in the list')
    // Newest first: the third Login's session ends, the others live on.
    const id = String(sessions[0]?.id)
    t.match(await admin.call('DELETE', `/admin/sessions/${id}`), { status: 200, body: { status: 0, message: 'Success' } })
    t.equal(await admin.authenticate(third.token), 403, 'its token ended at once')
    t.equal(await admin.authenticate(first.token), 200, 'the others live on')
    t.match(await admin.call('DELETE', `/admin/sessions/${id}`), { status: 404, body: { detail: 'no such session' } }, 'ended already')
    t.match(await admin.call('DELETE', '/admin/sessions/AAAAAAAAAAAAAAAAAAAAAA'), { status: 404, body: { detail: 'no such session' } }, 'unknown')
    t.equal(((await admin.call('GET', '/admin/users/ida/sessions')).body.sessions as unknown[]).length, 2)
    t.match(await admin.call('DELETE', '/admin/users/ida/sessions'), { status: 200, body: { sessions_ended: 2 } })
    t.equal(await admin.authenticate(first.token), 403)
    t.equal(await admin.authenticate(second.token), 403)
    t.same((await admin.call('GET', '/admin/users/ida/sessions')).body.sessions, [])
    t.match(await admin.call('GET', '/admin/users/nobody/sessions'), { status: 404, body: { detail: 'no such account' } })
    const ended = await admin.call('GET', '/admin/events?user=ida&event=session.end')
    t.equal((ended.body.events as unknown[]).length, 1, 'ending one session is an audit event')
  })

  t.test('its own OpenAPI document; the public one names no admin route', async (t) => {
    const admin = await adminFor(t, kind)
    const doc = await admin.call('GET', '/admin/openapi.json')
    t.equal(doc.status, 200)
    const paths = Object.keys(doc.body.paths as object)
    for (const path of ['/admin/users', '/admin/users/{username}', '/admin/users/{username}/unlock', '/admin/events', '/admin/users/{username}/sessions', '/admin/sessions/{id}']) t.ok(paths.includes(path), path)
    t.match(doc.body, { openapi: '3.1.0', components: { securitySchemes: { adminKey: { type: 'http', scheme: 'bearer' } } } })
    const publicDoc = (await admin.internal.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: object }>()
    t.notOk(Object.keys(publicDoc.paths).some((path) => path.startsWith('/admin')), 'no /admin path in the public document')
    t.equal((await admin.app.inject({ method: 'GET', url: '/admin/users', headers: { authorization: `Bearer ${KEY}` } })).statusCode, 404, 'not on the public port')
  })
}

t.test('Postgres and Redis', async (t) => { adminContract(t, 'real') })
t.test('embedded default', async (t) => { adminContract(t, 'embedded') })

t.test('no key configured: every /admin route is 404', async (t) => {
  const { app, config } = await buildTestApp(t, 'embedded')
  await app.ready()
  const internal = await buildInternalApp(app, config)
  t.teardown(async () => { await internal.close() })
  for (const [method, url] of [['GET', '/admin/users'], ['POST', '/admin/users'], ['GET', '/admin/openapi.json'], ['DELETE', '/admin/users/x'], ['GET', '/admin']] as const) {
    const res = await internal.inject({ method, url, headers: { authorization: `Bearer ${KEY}` } })
    t.equal(res.statusCode, 404, `${method} ${url}`)
    t.same(res.json(), { status: 404, message: 'Not Found' })
  }
})
