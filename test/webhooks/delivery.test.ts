import t from 'tap'
import { buildTestApp } from '../support/app.js'
import { buildInternalApp } from '../../src/app/internal-listener.js'
import { createSqlAuditLog } from '../../src/core/stores/audit-log.js'
import { createSqlWebhookOutbox } from '../../src/webhooks/outbox.js'
import { startDeliverer } from '../../src/webhooks/deliverer.js'
import { decodeWebhookSecret } from '../../src/config/parts/webhooks.js'
import { migratedDatabaseUrl, patientPostgres } from '../../support/postgres.js'
import { startWebhookReceiver } from '../../support/webhook-receiver.js'
import { fastWebhooks, login, newWebhookSecret } from './support.js'
import { jsonObject, LogCapture } from '../operations/support.js'

/*
 * Delivery: at least once, one webhook-id across retries, failed after the retry window (a
 * metric, the admin list, a manual retry); a dead receiver holds up neither Login nor another
 * receiver; instances sharing one Postgres never send one event at the same time.
 */

const ADMIN_KEY = 'admin-key-for-webhook-tests-0123456789'
const PASSWORD = 'passphrase of the owner'

t.test('a receiver that refuses: retried under one webhook-id, failed after the window, then retried by hand', async (t) => {
  const secret = newWebhookSecret()
  const receiver = await startWebhookReceiver(t, secret)
  receiver.answer = 503
  const capture = new LogCapture()
  // A receiver's own credential in its URL's query: the log names the receiver by its origin alone.
  const url = `${receiver.url}?key=receiver-credential-not-for-logs`
  const { app, config, addUser } = await buildTestApp(t, 'embedded', { webhooks: fastWebhooks([url], secret, { retryWindowMs: 600 }), adminKey: ADMIN_KEY, logLevel: 'info' }, { logStream: capture })
  await addUser('alice', PASSWORD)
  t.equal((await login(app, 'alice', PASSWORD)).status, 0)
  const internal = await buildInternalApp(app, config)
  t.teardown(async () => { await internal.close() })
  const admin = async (method: 'GET' | 'POST', url: string): Promise<{ status: number, body: Record<string, unknown> }> => {
    const res = await internal.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_KEY}` } })
    return { status: res.statusCode, body: res.json() }
  }
  type Delivery = { id: string, webhook_id: string, type: string, status: string, attempts: number, last_error: string | null }
  const deliveries = async (status: string): Promise<Delivery[]> => (await admin('GET', `/admin/webhooks/deliveries?status=${status}`)).body.deliveries as Delivery[]

  let failed: Delivery[] = []
  const started = Date.now()
  while ((failed = await deliveries('failed')).length === 0 && Date.now() - started < 10_000) await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal(failed.length, 1, 'given up after the retry window')
  const [row] = failed
  t.equal(row?.type, 'login.success')
  t.equal(row?.last_error, 'HTTP 503')
  t.ok((row?.attempts ?? 0) >= 2, `tried ${row?.attempts ?? 0} times`)
  const ids = new Set(receiver.attempts.map((attempt) => attempt.id))
  t.same([...ids], [row?.webhook_id], 'every attempt carried the one webhook-id')
  t.equal(receiver.events.length, 0)

  // The log says so too: the receivers at start, then a failed attempt and the giving up, each by the receiver's origin.
  const lines = capture.since(0).map((line) => jsonObject(line) ?? {})
  const origin = new URL(receiver.url).origin
  t.match(lines.find((line) => line.msg === 'webhooks: lifecycle events are delivered, signed, to these receivers'), { level: 30, receivers: [origin] })
  t.match(lines.find((line) => line.msg === 'webhook delivery failed: retried with backoff'), { level: 40, receiver: origin, problem: 'HTTP 503' })
  t.match(lines.find((line) => typeof line.msg === 'string' && line.msg.startsWith('webhook delivery given up')), { level: 40, receiver: origin, problem: 'HTTP 503' })
  t.notOk(capture.since(0).some((line) => line.includes('receiver-credential-not-for-logs') || line.includes('/hooks')), 'neither the path nor the query of the URL is logged')

  const metrics = await internal.inject({ method: 'GET', url: '/metrics' })
  t.match(metrics.body, /auth_webhook_deliveries\{status="failed"\} 1/)
  t.match(metrics.body, /auth_webhook_deliveries\{status="pending"\} 0/)
  t.match(metrics.body, /auth_webhook_attempts_total\{outcome="failed"\} 1/)

  t.equal((await admin('POST', '/admin/webhooks/deliveries/999999/retry')).status, 404, 'an unknown delivery')
  t.equal((await admin('POST', '/admin/webhooks/deliveries/x1/retry')).status, 400, 'not an id')
  t.equal((await admin('GET', '/admin/webhooks/deliveries?status=lost')).status, 400, 'not a status')
  receiver.answer = 200
  t.equal((await admin('POST', `/admin/webhooks/deliveries/${row?.id ?? ''}/retry`)).status, 200)
  await receiver.waitFor('the retried event', (events) => events.length === 1)
  t.equal(receiver.events[0]?.id, row?.webhook_id, 'the same webhook-id after a manual retry')
  await app.backends.audit.flush()
  let delivered: Delivery[] = []
  while ((delivered = await deliveries('delivered')).length === 0 && Date.now() - started < 15_000) await new Promise((resolve) => setTimeout(resolve, 20))
  t.equal(delivered[0]?.id, row?.id, 'listed as delivered')
  t.same(await deliveries('failed'), [])
  t.equal((await admin('POST', `/admin/webhooks/deliveries/${row?.id ?? ''}/retry`)).status, 404, 'a delivered one is not retried')
})

t.test('a receiver that never answers holds up neither Login nor the other receiver', async (t) => {
  const secret = newWebhookSecret()
  const dead = await startWebhookReceiver(t, secret)
  dead.answer = 'hang'
  const live = await startWebhookReceiver(t, secret)
  // A timeout far beyond what the Logins and the live delivery take, even on a loaded machine: had
  // either waited for the dead receiver, it would show as a wait of the whole timeout. (The
  // durations are printed, not judged: at a load of 20 the five Logins took 2.3 s.)
  const timeoutMs = 60_000
  const { app, addUser } = await buildTestApp(t, 'embedded', { webhooks: fastWebhooks([dead.url, live.url], secret, { timeoutMs }) })
  await addUser('alice', PASSWORD)
  const began = Date.now()
  for (let i = 0; i < 5; i++) t.equal((await login(app, 'alice', PASSWORD)).status, 0)
  const loginsMs = Date.now() - began
  t.comment(`five Logins in ${loginsMs} ms while a receiver hangs`)
  t.ok(loginsMs < timeoutMs / 2, 'the Logins did not wait for the hanging receiver')
  await live.waitFor('five Logins at the live receiver', (events) => events.filter((event) => event.type === 'login.success').length === 5, timeoutMs / 2)
  t.ok(Date.now() - began < timeoutMs / 2, 'delivered to the live receiver before the dead one\'s request timed out')
  t.ok(dead.attempts.length >= 1, 'the dead receiver was tried')
  t.equal(dead.events.length, 0)
})

t.test('two instances on one Postgres never send one event at the same time, and lose none', async (t) => {
  const url = await migratedDatabaseUrl(t)
  const secret = newWebhookSecret()
  const receiver = await startWebhookReceiver(t, secret)
  receiver.delayMs = 20
  const first = patientPostgres(url)
  const second = patientPostgres(url)
  t.teardown(async () => { await Promise.all([first.close(), second.close()]) })
  const audit = createSqlAuditLog(first, { webhookUrls: [receiver.url] })
  const EVENTS = 300
  for (let i = 0; i < EVENTS; i++) audit.record({ event: 'logout', username: `user${i}`, accountId: String(i), clientIp: '192.0.2.1', outcome: 'terminated', tokensEnded: 1 })
  await audit.flush()
  const decoded = decodeWebhookSecret(secret)
  if (!decoded.ok) throw new Error(decoded.problem)
  const options = { urls: [receiver.url], key: decoded.key, timeoutMs: 2000, backoffMs: 50, maxBackoffMs: 1000, retryWindowMs: 86_400_000, pollMs: 20, batch: 8 }
  const instances = [startDeliverer({ ...options, outbox: createSqlWebhookOutbox(first) }), startDeliverer({ ...options, outbox: createSqlWebhookOutbox(second) })]
  t.teardown(async () => { await Promise.all(instances.map(async (instance) => { await instance.stop() })) })
  await receiver.waitFor(`${EVENTS} events`, (events) => events.length === EVENTS, 30_000)
  t.equal(receiver.overlapping(), 0, 'no webhook-id sent while it was being sent')
  t.same(receiver.duplicates(), [], 'none delivered twice')
  t.equal(receiver.attempts.length, EVENTS, 'one attempt each')
  const { rows } = await first.query<{ status: string, n: number }>('SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status')
  await new Promise((resolve) => setTimeout(resolve, 100))
  const after = await first.query<{ status: string, n: number }>('SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status')
  t.same(after.rows, [{ status: 'delivered', n: EVENTS }], `all marked delivered (${JSON.stringify(rows)} a moment before)`)
})
