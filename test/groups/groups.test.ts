import t, { type Test } from 'tap'
import type { InjectOptions } from 'fastify'
import { buildInternalApp } from '../../src/app/internal-listener.js'
import { webhookMessage } from '../../src/core/events.js'
import { buildTestApp, type BackendKind } from '../support/app.js'

/*
 * Groups (api-contract, Groups and access rules) through the admin API, on Postgres + Redis and
 * on the embedded default: the user view, the group reads, and a change reaching every answer
 * about a token issued before it (Authenticate, /auth/verify and its rule, introspection), an
 * API key's too.
 */

const KEY = 'admin-key-for-tests-0123456789-abcdefghij'
const PASSWORD = 'a long enough passphrase 1'
const INTROSPECTION = { id: 'gw', secret: 'introspection-secret-0123456789' }

async function setUp (t: Test, kind: BackendKind) {
  const { app, config } = await buildTestApp(t, kind, { adminKey: KEY, introspectionClients: [INTROSPECTION] })
  await app.ready()
  const internal = await buildInternalApp(app, config)
  t.teardown(async () => { await internal.close() })
  const admin = async (method: InjectOptions['method'], url: string, body?: unknown) => {
    const res = await internal.inject({
      method, url, headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { payload: JSON.stringify(body) })
    })
    return { status: res.statusCode, body: res.json<Record<string, unknown>>() }
  }
  const login = async (username: string): Promise<string> => {
    const res = await app.inject({ method: 'POST', url: '/auth/Login', payload: { username, password: PASSWORD } })
    const token = res.json<{ token?: string }>().token
    if (token === undefined) throw new Error(`no token for ${username}: ${res.body}`)
    return token
  }
  const authenticate = async (token: string) => (await app.inject({ method: 'POST', url: '/auth/Authenticate', payload: { token } })).json<Record<string, unknown>>()
  const verify = async (token: string, query = '') => await app.inject({ method: 'GET', url: `/auth/verify${query}`, headers: { authorization: `Bearer ${token}` } })
  const introspect = async (token: string) => (await app.inject({
    method: 'POST',
    url: '/auth/introspect',
    headers: { authorization: `Basic ${Buffer.from(`${INTROSPECTION.id}:${INTROSPECTION.secret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
    payload: `token=${encodeURIComponent(token)}`
  })).json<Record<string, unknown>>()
  for (const username of ['alice', 'bob']) t.equal((await admin('POST', '/admin/users', { username, password: PASSWORD })).status, 200)
  return { app, admin, login, authenticate, verify, introspect }
}

function groupsContract (t: Test, kind: BackendKind): void {
  t.test('PUT sets the whole local set; the user view carries it; names are checked', async (t) => {
    const s = await setUp(t, kind)
    const set = await s.admin('PUT', '/admin/users/ALICE/groups', { groups: ['ops', 'dev', 'ops'] })
    t.match(set, { status: 200, body: { status: 0, user: { username: 'alice', groups: ['dev', 'ops'], directory_groups: [] } } }, 'sorted, each once, the name canonical')
    t.match(await s.admin('GET', '/admin/users/alice'), { body: { user: { groups: ['dev', 'ops'] } } })
    t.match(await s.admin('GET', '/admin/users/bob'), { body: { user: { groups: [] } } })
    for (const bad of ['Ops', '-ops', '', 'a'.repeat(65), 'a b', 'ops,dev']) {
      const refused = await s.admin('PUT', '/admin/users/alice/groups', { groups: [bad] })
      t.equal(refused.status, 400, `${JSON.stringify(bad)} refused`)
      t.match(refused.body.detail, /^groups holds a name that is not a group name: 1 to 64 characters/, 'the detail says what is wrong')
      if (bad !== '') t.notOk(String(refused.body.detail).includes(bad), 'and never the value sent (api-contract, Every route)')
    }
    t.equal((await s.admin('PUT', '/admin/users/alice/groups', { groups: { ops: true } })).status, 400, 'not a list')
    t.equal((await s.admin('PUT', '/admin/users/alice/groups', { group: ['ops'] })).status, 400, 'a misspelt field')
    t.match(await s.admin('PUT', '/admin/users/nobody/groups', { groups: ['ops'] }), { status: 404 })
    t.match(await s.admin('GET', '/admin/users/alice'), { body: { user: { groups: ['dev', 'ops'] } } }, 'a refused change changed nothing')
    t.match(await s.admin('PUT', '/admin/users/alice/groups', { groups: [] }), { status: 200, body: { user: { groups: [] } } }, '[] empties it')
  })

  t.test('GET /admin/groups and /admin/groups/{group}: counts, members paged like users, 404 for a group with none', async (t) => {
    const s = await setUp(t, kind)
    await s.admin('PUT', '/admin/users/alice/groups', { groups: ['ops', 'dev'] })
    await s.admin('PUT', '/admin/users/bob/groups', { groups: ['ops'] })
    t.same((await s.admin('GET', '/admin/groups')).body.groups, [{ name: 'dev', members: 1 }, { name: 'ops', members: 2 }])
    const first = await s.admin('GET', '/admin/groups/ops?limit=1')
    t.match(first.body, { group: { name: 'ops', members: ['alice'] } })
    t.type(first.body.next_cursor, 'string')
    const second = await s.admin('GET', `/admin/groups/ops?limit=1&cursor=${String(first.body.next_cursor)}`)
    t.match(second.body, { group: { name: 'ops', members: ['bob'] }, next_cursor: null })
    t.match(await s.admin('GET', '/admin/groups/nobody-here'), { status: 404, body: { message: 'Not Found', detail: 'no account is in this group' } })
    t.match(await s.admin('GET', '/admin/groups/Not%20A%20Name'), { status: 404 })
  })

  t.test('a change reaches a token issued before it at once: Authenticate, verify and its rule, introspection', async (t) => {
    const s = await setUp(t, kind)
    const token = await s.login('alice')
    t.same((await s.authenticate(token)).groups, [], 'none yet: []')
    t.equal((await s.verify(token)).headers['x-auth-groups'], undefined, 'no header when none')
    const refused = await s.verify(token, '?group=ops')
    t.equal(refused.statusCode, 403, 'active, outside the group: 403, not 401')
    t.equal(refused.body, '', 'empty body')
    t.equal(refused.headers['cache-control'], 'no-store')

    await s.admin('PUT', '/admin/users/alice/groups', { groups: ['ops', 'dev'] })
    t.same((await s.authenticate(token)).groups, ['dev', 'ops'], 'the token issued before the change carries it')
    t.equal((await s.verify(token)).headers['x-auth-groups'], 'dev,ops')
    t.equal((await s.verify(token, '?group=ops')).statusCode, 200)
    t.equal((await s.verify(token, '?group=admins,ops')).statusCode, 200, 'one of the list is enough')
    t.equal((await s.verify(token, '?group=admins')).statusCode, 403)
    t.equal((await s.verify(token, '?group=ops&group=admins')).statusCode, 403, 'two parameters: each must be met')
    t.same((await s.introspect(token)).groups, ['dev', 'ops'])

    await s.admin('PUT', '/admin/users/alice/groups', { groups: ['dev'] })
    t.same((await s.authenticate(token)).groups, ['dev'], 'a removal, at once')
    t.equal((await s.verify(token, '?group=ops')).statusCode, 403)
    t.same((await s.introspect(token)).groups, ['dev'])
    t.equal((await s.verify('no-such-token', '?group=ops')).statusCode, 401, 'no active token: still 401')

    const fresh = await s.login('alice')
    t.same((await s.authenticate(fresh)).groups, ['dev'], 'a new Login reads the set')
    await s.admin('PUT', '/admin/users/alice/groups', { groups: [] })
    t.same((await s.authenticate(token)).groups, [])
    t.same((await s.authenticate(fresh)).groups, [])
    t.same((await s.authenticate(await s.login('bob'))).groups, [], 'another account untouched')
  })

  t.test('an API key carries its account\'s groups, and a change', async (t) => {
    const s = await setUp(t, kind)
    await s.admin('PUT', '/admin/users/bob/groups', { groups: ['billing'] })
    const made = await s.admin('POST', '/admin/users/bob/keys', { name: 'ci', expires_in_days: 7 })
    const secret = String(made.body.secret)
    t.match(await s.authenticate(secret), { kind: 'api_key', groups: ['billing'] })
    await s.admin('PUT', '/admin/users/bob/groups', { groups: ['billing', 'deploy'] })
    t.match(await s.authenticate(secret), { kind: 'api_key', groups: ['billing', 'deploy'] })
    t.equal((await s.verify(secret, '?group=deploy')).statusCode, 200)
  })

  t.test('audited as groups.change, sent as account.groups_changed with the new set', async (t) => {
    const s = await setUp(t, kind)
    await s.admin('PUT', '/admin/users/alice/groups', { groups: ['ops'] })
    await s.admin('PUT', '/admin/users/alice/groups', { groups: ['ops'] })
    await s.app.backends.audit.flush()
    const events = await s.app.backends.audit.list({ username: 'alice', event: 'groups.change' })
    t.equal(events.length, 1, 'the same set again is no change')
    t.match(events[0], { outcome: 'set:ops', credential: /^key:/ })
  })
}

t.test('Postgres and Redis', async (t) => { groupsContract(t, 'real') })
t.test('embedded default', async (t) => { groupsContract(t, 'embedded') })

t.test('the webhook body: data.groups is the account\'s whole set', async (t) => {
  const message = webhookMessage({ event: 'groups.change', username: 'alice', accountId: '7', outcome: 'set:ops', groups: ['dev', 'ops'] }, new Date(0))
  t.equal(message?.type, 'account.groups_changed')
  t.match(JSON.parse(message?.body ?? '{}'), { type: 'account.groups_changed', data: { outcome: 'set:ops', groups: ['dev', 'ops'], username: 'alice' } })
})
