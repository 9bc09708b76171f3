import t, { type Test } from 'tap'
import { generateToken } from '@auth-token-service/protocol/token'
import type { FastifyInstance } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import { buildApp } from '../../src/app/app.js'
import type { Config } from '../../src/config/config.js'
import { createPostgresDatabase } from '../../src/db/postgres.js'
import type { Database } from '../../src/db/database.js'
import { LOG_THROTTLE_MS } from '@auth-token-service/protocol/throttled-log'
import { createMemoryTokenStore } from '../../src/core/stores/memory/token-store.js'
import { createRedisTokenStore } from '../../src/core/stores/redis/token-store.js'
import type { ServiceTokenStore } from '../../src/app/backends.js'
import { testConfig } from '../support/config.js'
import { freshPglite } from '../support/pglite.js'
import { backendsOf, jsonObject, LogCapture } from './support.js'
import { fixtureAccounts } from '../support/app.js'

/*
 * Under a login flood or a backend outage the 503s come by the thousand: each used to log a
 * ~1 KB stack. A 503 from a full hash queue or a backend that does not answer logs one short
 * line per cause (what, why, no stack) at most every 10 s, counting the repeats; any other 5xx
 * is a bug and keeps its whole error.
 */

interface Built { app: FastifyInstance, capture: LogCapture }

async function appOn (t: Test, config: Config, database: Database, tokens: ServiceTokenStore): Promise<Built> {
  const capture = new LogCapture()
  const app = await buildApp(config, { backends: backendsOf(t, config, database, tokens), logStream: capture })
  t.teardown(async () => { await app.close() })
  return { app, capture }
}

const records = (capture: LogCapture, from = 0): Array<Record<string, unknown>> =>
  capture.since(from).map((line) => jsonObject(line) ?? { unparsable: line })

const unavailableLines = (capture: LogCapture, from = 0): Array<Record<string, unknown>> =>
  records(capture, from).filter((r) => typeof r.msg === 'string' && r.msg.startsWith('service unavailable'))

/** A Postgres nobody listens on: for tests whose requests never reach the database. */
const noDatabase = (): Database => createPostgresDatabase({ connectionString: 'postgres://postgres@127.0.0.1:1/none', connectionTimeoutMillis: 500 })

function short (t: Test, line: Record<string, unknown> | undefined): void {
  const text = JSON.stringify(line)
  t.notMatch(text, /"stack"|\bat .+:\d+:\d+/, `no stack: ${text}`)
  t.ok(text.length < 400, `short: ${text.length} characters`)
}

t.test('a full hash queue: one warn line at once, one when the interval ends with the repeats, no stack', async (t) => {
  // One hash at a time and none waiting: of concurrent Logins, all but one find the queue full.
  const config = testConfig({ logLevel: 'info', hashing: { concurrency: 1, maxQueued: 0 } })
  const { app, capture } = await appOn(t, config, await freshPglite(), createMemoryTokenStore({ denyTtlMs: 1000 }))
  await fixtureAccounts(app).add('flood', 'flood secret', false)
  const from = capture.mark()
  const statuses = await Promise.all(Array.from({ length: 30 }, async () =>
    (await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'flood', password: 'flood secret' } })).statusCode))
  const refused = statuses.filter((status) => status === 503).length
  t.ok(refused >= 2, `${refused} of 30 Logins refused with 503`)
  const first = unavailableLines(capture, from)
  t.equal(first.length, 1, 'one line for all of them, so far')
  t.match(first[0], { level: 40, unavailable: 'hash-queue', repeats: 0, msg: 'service unavailable: the password-hash queue is full' })
  short(t, first[0])
  t.notOk(records(capture, from).some((r) => typeof r.msg === 'string' && r.msg !== 'request completed' && !r.msg.startsWith('service unavailable')), 'and no other line about them')

  await sleep(LOG_THROTTLE_MS + 300)
  const all = unavailableLines(capture, from)
  t.equal(all.length, 2, 'one more when the 10 s are over')
  t.match(all[1], { unavailable: 'hash-queue', repeats: refused - 2 }, 'standing for the repeats in between')
})

t.test('Redis that cannot be reached: one error line naming Redis and why, no stack', async (t) => {
  const config = testConfig({ logLevel: 'info' })
  const deadRedis = createRedisTokenStore({ url: 'redis://127.0.0.1:1', denyTtlMs: 1000, commandTimeoutMs: 200 })
  const { app, capture } = await appOn(t, config, noDatabase(), deadRedis)
  const from = capture.mark()
  for (let i = 0; i < 5; i++) {
    t.equal((await app.inject({ url: `/auth/Authenticate/${generateToken('1')}` })).statusCode, 503)
  }
  const lines = unavailableLines(capture, from)
  t.equal(lines.length, 1, 'five 503s, one line')
  t.match(lines[0], { level: 50, unavailable: 'redis', reason: String, msg: 'service unavailable: Redis did not answer' })
  short(t, lines[0])
})

t.test('Postgres that cannot be reached: one error line naming the database, no stack', async (t) => {
  const config = testConfig({ logLevel: 'info' })
  const { app, capture } = await appOn(t, config, noDatabase(), createMemoryTokenStore({ denyTtlMs: 1000 }))
  const from = capture.mark()
  for (let i = 0; i < 3; i++) {
    t.equal((await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'nobody', password: 'x' } })).statusCode, 503)
  }
  const lines = unavailableLines(capture, from)
  t.equal(lines.length, 1, 'three 503s, one line')
  t.match(lines[0], { level: 50, unavailable: 'database', reason: 'ECONNREFUSED', msg: 'service unavailable: the database did not answer' })
  short(t, lines[0])
})

t.test('any other 5xx is a bug: its whole error, stack included, every time', async (t) => {
  const config = testConfig({ logLevel: 'info' })
  const { app, capture } = await appOn(t, config, noDatabase(), createMemoryTokenStore({ denyTtlMs: 1000 }))
  app.get('/broken', async () => { throw new Error('a bug') })
  const from = capture.mark()
  for (let i = 0; i < 2; i++) t.equal((await app.inject({ url: '/broken' })).statusCode, 500)
  const errors = records(capture, from).filter((r) => r.level === 50)
  t.equal(errors.length, 2, 'a line each')
  t.match(errors[0], { err: { message: 'a bug', stack: /Error: a bug\n\s+at / } }, 'with the stack')
})
