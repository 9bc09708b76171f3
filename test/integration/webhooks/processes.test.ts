import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import pg from 'pg'
import { serviceEnv, startService, type ServiceProcess } from '../../../support/service.js'
import { migratedDatabaseUrl } from '../../../support/postgres.js'
import { startThrowawayRedis } from '../../../support/redis.js'
import { startWebhookReceiver, type WebhookReceiver } from '../../../support/webhook-receiver.js'
import { newWebhookSecret } from '../../webhooks/support.js'

/*
 * The built service as a process, delivering to a real receiver (which checks every signature
 * with the standardwebhooks package): a receiver down for 20 s, a service killed while events
 * wait, two instances on one Postgres. Every event arrives; none is sent twice at once.
 */

const ACCOUNT = Object.freeze({ username: 'hook-owner', password: 'webhook test passphrase 1' })

interface Setup {
  env: Record<string, string>
  databaseUrl: string
  receiver: WebhookReceiver
}

async function setUp (t: Test, extra: Record<string, string> = {}): Promise<Setup> {
  const secret = newWebhookSecret()
  const receiver = await startWebhookReceiver(t, secret)
  const redis = await startThrowawayRedis(t, { aof: false })
  const databaseUrl = await migratedDatabaseUrl(t)
  const env = serviceEnv({ redisUrl: redis.url, databaseUrl }, ACCOUNT, {
    AUTH_REDIS_COMMAND_TIMEOUT_MS: '2000',
    AUTH_WEBHOOK_URL: receiver.url,
    AUTH_WEBHOOK_SECRET: secret,
    AUTH_WEBHOOK_BACKOFF_SECONDS: '1',
    AUTH_WEBHOOK_TIMEOUT_SECONDS: '2',
    ...extra
  })
  return { env, databaseUrl, receiver }
}

async function login (service: ServiceProcess, password: string = ACCOUNT.password): Promise<number> {
  const response = await fetch(`${service.baseUrl}/auth/Login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'webhook-test/1' },
    body: new URLSearchParams({ username: ACCOUNT.username, password }).toString()
  })
  return ((await response.json()) as { status: number }).status
}

/** Outbox rows by status, straight from Postgres. */
async function outboxCounts (databaseUrl: string): Promise<Record<string, number>> {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    const { rows } = await client.query<{ status: string, n: number }>('SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status')
    return Object.fromEntries(rows.map((row) => [row.status, row.n]))
  } finally {
    await client.end()
  }
}

async function until (what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const started = Date.now()
  while (!await check()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await sleep(100)
  }
}

t.test('a receiver answering 503 for 20 s, then recovering: every event arrives', async (t) => {
  const { env, databaseUrl, receiver } = await setUp(t)
  receiver.answer = 503
  const service = await startService(t, env)
  for (let i = 0; i < 10; i++) t.equal(await login(service), 0)
  for (let i = 0; i < 2; i++) t.equal(await login(service, 'a wrong passphrase'), 701)
  await until('12 outbox rows', async () => (await outboxCounts(databaseUrl)).pending === 12, 10_000)
  await sleep(20_000)
  t.equal(receiver.events.length, 0, 'nothing taken while the receiver refused')
  t.ok(receiver.attempts.length >= 12 * 3, `${receiver.attempts.length} refused attempts in 20 s`)
  const recoveredAt = Date.now()
  receiver.answer = 200
  await receiver.waitFor('12 events', (events) => events.length === 12, 120_000)
  t.comment(`all 12 delivered ${Date.now() - recoveredAt} ms after the receiver recovered`)
  t.equal(receiver.events.filter((event) => event.type === 'login.success').length, 10)
  t.equal(receiver.events.filter((event) => event.type === 'login.failure').length, 2)
  t.equal(receiver.refused(), 0, 'every signature verified')
  // One webhook-id per event across every attempt: the refused attempts carried only these ids.
  const ids = new Set(receiver.events.map((event) => event.id))
  t.ok(receiver.attempts.every((attempt) => ids.has(attempt.id)), 'retries reused the event\'s webhook-id')
  await until('the outbox marked delivered', async () => (await outboxCounts(databaseUrl)).delivered === 12, 10_000)
  const leaked = receiver.attempts.filter((attempt) => attempt.body.includes(ACCOUNT.password) || attempt.body.includes('a wrong passphrase') || /\$argon2/.test(attempt.body))
  t.equal(leaked.length, 0, 'no password or hash in any body')
})

t.test('the service killed while events wait, then started again: every event arrives', async (t) => {
  const { env, databaseUrl, receiver } = await setUp(t)
  receiver.answer = 503
  const first = await startService(t, env)
  for (let i = 0; i < 8; i++) t.equal(await login(first), 0)
  await until('8 outbox rows', async () => (await outboxCounts(databaseUrl)).pending === 8, 10_000)
  t.same((await first.stop('SIGKILL')).signal, 'SIGKILL')
  receiver.answer = 200
  await sleep(1000)
  t.equal(receiver.events.length, 0, 'nothing delivered while no service ran')
  const second = await startService(t, env)
  await receiver.waitFor('8 events after the restart', (events) => events.length === 8, 60_000)
  t.equal(receiver.refused(), 0)
  t.same(receiver.duplicates(), [])
  await second.stop('SIGTERM')
})

t.test('two instances sharing one Postgres: every event delivered, none twice at the same time', async (t) => {
  const { env, databaseUrl, receiver } = await setUp(t)
  receiver.delayMs = 30
  const instances = [await startService(t, env), await startService(t, env)]
  const LOGINS = 60
  // Four at a time (one account's fair share of the hashing slots is small: more would be 429s).
  const answers: number[] = []
  await Promise.all(Array.from({ length: 4 }, async (_, worker) => {
    for (let i = worker; i < LOGINS; i += 4) answers.push(await login(instances[i % 2] as ServiceProcess))
  }))
  t.same(answers.filter((status) => status !== 0), [], `${LOGINS} Logins across the two`)
  await receiver.waitFor(`${LOGINS} events`, (events) => events.length === LOGINS, 60_000)
  t.equal(receiver.overlapping(), 0, 'no event sent while another instance was sending it')
  t.same(receiver.duplicates(), [], 'none delivered twice')
  t.equal(receiver.refused(), 0)
  await until('the outbox marked delivered', async () => (await outboxCounts(databaseUrl)).delivered === LOGINS, 10_000)
  for (const instance of instances) await instance.stop('SIGTERM')
})
