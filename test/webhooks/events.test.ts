import t from 'tap'
import * as OTPAuth from 'otpauth'
import { hashToken } from '@auth-token-service/protocol/token'
import { buildTestApp } from '../support/app.js'
import { buildInternalApp } from '../../src/app/internal-listener.js'
import { startWebhookReceiver } from '../../support/webhook-receiver.js'
import { CHROME, FIREFOX, fastWebhooks, login, newWebhookSecret } from './support.js'

/*
 * Lifecycle events as signed webhooks (api-contract.md "Lifecycle events and webhooks"): every
 * kind of event the service reports reaches a real receiver, which checks each signature with
 * the standardwebhooks package; the bodies carry the contract's fields and no secret.
 */

const PASSWORD = 'first passphrase of the owner'
const NEW_PASSWORD = 'second passphrase of the owner'
const ADMIN_KEY = 'admin-key-for-webhook-tests-0123456789'

t.test('every lifecycle event reaches the receiver, signed, and no body holds a secret', async (t) => {
  const secret = newWebhookSecret()
  const receiver = await startWebhookReceiver(t, secret)
  const { app, config, database, addUser } = await buildTestApp(t, 'embedded', { webhooks: fastWebhooks([receiver.url], secret), maxFailedLogins: 3, adminKey: ADMIN_KEY })
  await addUser('alice', PASSWORD)
  await addUser('bob', 'bob passphrase here')

  const secrets: string[] = [PASSWORD, NEW_PASSWORD, 'bob passphrase here', 'wrong passphrase']
  const remember = (token: string | undefined): string => {
    if (token === undefined) throw new Error('no token')
    secrets.push(token, hashToken(token))
    return token
  }

  // login.success (alice's first Login: no new_device, nothing to compare with), then from Chrome: new device.
  const first = remember((await login(app, 'alice', PASSWORD, FIREFOX)).token)
  const second = remember((await login(app, 'alice', PASSWORD, CHROME)).token)
  remember((await login(app, 'alice', PASSWORD, CHROME)).token)
  // login.failure
  t.equal((await login(app, 'alice', 'wrong passphrase')).status, 701)
  // logout
  t.equal((await app.inject({ method: 'POST', url: '/auth/Logout', headers: { authorization: `Bearer ${first}` } })).statusCode, 200)
  // session.ended: one of alice's sessions, ended by id
  const listed = await app.inject({ method: 'GET', url: '/auth/sessions', headers: { authorization: `Bearer ${second}` } })
  const other = (listed.json().sessions as Array<{ id: string, current: boolean }>).find((session) => !session.current)
  t.ok(other, 'alice has another session')
  t.equal((await app.inject({ method: 'DELETE', url: `/auth/sessions/${other?.id ?? ''}`, headers: { authorization: `Bearer ${second}` } })).statusCode, 200)
  // key.created, key.revoked (self-service)
  const made = await app.inject({ method: 'POST', url: '/auth/keys', headers: { authorization: `Bearer ${second}`, 'content-type': 'application/json' }, payload: { name: 'ci', current_password: PASSWORD } })
  t.equal(made.statusCode, 200)
  const { secret: keySecret, key } = made.json() as { secret: string, key: { id: string } }
  secrets.push(keySecret, hashToken(keySecret))
  t.equal((await app.inject({ method: 'DELETE', url: `/auth/keys/${key.id}`, headers: { authorization: `Bearer ${second}` } })).statusCode, 200)
  // password.changed (self-service)
  const changed = await app.inject({ method: 'POST', url: '/auth/Password', headers: { authorization: `Bearer ${second}`, 'content-type': 'application/json' }, payload: { current_password: PASSWORD, new_password: NEW_PASSWORD } })
  t.equal(changed.statusCode, 200, changed.body)
  // account.locked: bob's third failure in a row locks him
  for (let i = 0; i < 3; i++) t.equal((await login(app, 'bob', 'wrong passphrase')).status, 701)
  // account.revoked, account.disabled, account.enabled (admin API)
  const internal = await buildInternalApp(app, config)
  t.teardown(async () => { await internal.close() })
  const admin = async (method: 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, payload?: unknown): Promise<number> =>
    (await internal.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) }, ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }) })).statusCode
  t.equal(await admin('DELETE', '/admin/users/alice/sessions'), 200)
  t.equal(await admin('PATCH', '/admin/users/alice', { disabled: true }), 200)
  t.equal(await admin('PATCH', '/admin/users/alice', { disabled: false }), 200)
  t.equal(await admin('PATCH', '/admin/users/bob', { password: 'bob passphrase number two' }), 200)
  secrets.push('bob passphrase number two')
  // account.groups_changed (admin API): data.groups is the account's whole set
  t.equal(await admin('PUT', '/admin/users/bob/groups', { groups: ['ops', 'dev'] }), 200)

  const expected = ['login.success', 'login.new_device', 'login.failure', 'logout', 'session.ended', 'key.created', 'key.revoked',
    'password.changed', 'account.locked', 'account.revoked', 'account.disabled', 'account.enabled', 'account.groups_changed']
  await receiver.waitFor('every kind of event', (events) => expected.every((type) => events.some((event) => event.type === type)) &&
    events.filter((event) => event.type === 'password.changed').length === 2)

  const count = (type: string): number => receiver.events.filter((event) => event.type === type).length
  t.equal(receiver.refused(), 0, 'the standardwebhooks library accepted every signature')
  t.equal(count('login.success'), 3)
  t.equal(count('login.failure'), 4, 'alice once, bob three times')
  t.equal(count('login.new_device'), 1, 'Chrome after Firefox, once; the first Login of the account is not one')
  t.equal(count('account.locked'), 1)

  const newDevice = receiver.events.find((event) => event.type === 'login.new_device')
  t.match(newDevice?.data, { username: 'alice', client_ip: '198.51.100.7', user_agent: CHROME, device: { user_agent_family: 'Chrome', network: '198.51.100.0/24' } })
  const success = receiver.events.find((event) => event.type === 'login.success')
  t.match(success?.data, { username: 'alice', account_id: /^\d+$/, client_ip: '198.51.100.7', user_agent: FIREFOX, outcome: 'issued' })
  t.match(receiver.events.find((event) => event.type === 'account.disabled')?.data, { username: 'alice', tokens_ended: Number })
  t.equal(count('account.groups_changed'), 1)
  t.match(receiver.events.find((event) => event.type === 'account.groups_changed')?.data, { username: 'bob', account_id: /^\d+$/, outcome: 'set:dev,ops', groups: ['dev', 'ops'] })

  for (const event of receiver.events) {
    t.match(event.id, /^msg_[A-Za-z0-9_-]{22}$/, `${event.type}: a webhook-id`)
    t.match(event.timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, `${event.type}: an ISO 8601 UTC timestamp`)
    t.same(Object.keys(JSON.parse(event.body) as object).sort(), ['data', 'timestamp', 'type'])
  }
  t.equal(new Set(receiver.events.map((event) => event.id)).size, receiver.events.length, 'one webhook-id per event')

  // No secret in any body: passwords, tokens, key secrets, their hashes, the stored password hashes.
  const { rows } = await database.query<{ password_hash: string | null }>('SELECT password_hash FROM users')
  for (const row of rows) if (row.password_hash !== null) secrets.push(row.password_hash)
  const { rows: stored } = await database.query<{ payload: string }>('SELECT payload FROM webhook_deliveries')
  t.ok(stored.length >= receiver.events.length)
  const bodies = [...receiver.attempts.map((attempt) => attempt.body), ...stored.map((row) => row.payload)]
  const leaks = secrets.filter((value) => bodies.some((body) => body.includes(value)))
  t.same(leaks.map((value) => value.slice(0, 6)), [], 'no secret in any body')
})

t.test('a second factor confirmed and removed: totp.enabled and totp.disabled, with neither the secret nor a recovery code in a body', async (t) => {
  const secret = newWebhookSecret()
  const receiver = await startWebhookReceiver(t, secret)
  const { app, addUser } = await buildTestApp(t, 'embedded', { webhooks: fastWebhooks([receiver.url], secret) })
  await addUser('carol', PASSWORD)
  // Away from a step's end, so that the code of the step before confirms and the code of now removes.
  const into = Date.now() % 30_000
  if (into > 27_000) await new Promise((resolve) => setTimeout(resolve, 30_000 - into + 100))
  const token = (await login(app, 'carol', PASSWORD, FIREFOX)).token ?? ''
  const bearer = { authorization: `Bearer ${token}` }
  const begun = await app.inject({ method: 'POST', url: '/auth/totp', headers: bearer, payload: { current_password: PASSWORD } })
  t.equal(begun.statusCode, 200)
  const enrollment = begun.json<{ secret: string, otpauth_uri: string, recovery_codes: string[] }>()
  const generator = OTPAuth.URI.parse(enrollment.otpauth_uri)
  if (!(generator instanceof OTPAuth.TOTP)) throw new Error('not a TOTP URI')
  const confirmed = await app.inject({ method: 'POST', url: '/auth/totp/confirm', headers: { ...bearer, 'content-type': 'application/json' }, payload: { code: generator.generate({ timestamp: Date.now() - 30_000 }) } })
  t.equal(confirmed.statusCode, 200, confirmed.body)
  const removed = await app.inject({ method: 'DELETE', url: '/auth/totp', headers: { ...bearer, 'content-type': 'application/json' }, payload: { current_password: PASSWORD, code: generator.generate() } })
  t.equal(removed.statusCode, 200, removed.body)

  await receiver.waitFor('totp.enabled and totp.disabled', (events) => ['totp.enabled', 'totp.disabled'].every((type) => events.some((event) => event.type === type)))
  t.equal(receiver.refused(), 0, 'every signature verified')
  t.match(receiver.events.find((event) => event.type === 'totp.enabled')?.data, { username: 'carol', account_id: /^\d+$/ })
  t.match(receiver.events.find((event) => event.type === 'totp.disabled')?.data, { username: 'carol' })
  const secrets = [PASSWORD, token, enrollment.secret, ...enrollment.recovery_codes]
  const leaks = secrets.filter((value) => receiver.attempts.some((attempt) => attempt.body.includes(value)))
  t.same(leaks.map((value) => value.slice(0, 4)), [], 'no secret, token or recovery code in any body')
})
