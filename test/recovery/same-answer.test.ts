import t from 'tap'
import { randomBytes } from 'node:crypto'
import Fastify from 'fastify'
import { createMemoryRequestLimiter } from '../../src/core/stores/memory/request-limiter.js'
import { registerBodyParsing } from '../../src/http/parsing.js'
import { DEFAULT_PASSWORD_POLICY } from '../../src/passwords/policy.js'
import { createRecovery, createSqlRecoveryStore, recoveryRoutes } from '../../src/recovery/index.js'
import type { RecoveryStore } from '../../src/recovery/store.js'
import { fixtureAccounts } from '../support/app.js'
import { buildRecoveryApp, FORM, form } from './support.js'

/**
 * POST /auth/reset answers the same, in the same time, whether or not an account matched: not by
 * padding to a clock (a timed test would be flaky), but because the answer never waits for the
 * lookup. Here the lookup is held closed: if the route awaited it, no answer would come.
 */

t.test('the answer never waits for the account lookup, so it cannot depend on it', async (t) => {
  const { app, database } = await buildRecoveryApp(t)
  const accounts = fixtureAccounts(app)
  await accounts.add('alice', 'correct horse battery', false)
  await accounts.setEmail('alice', 'alice@example.org')

  const real = createSqlRecoveryStore(database)
  let open: () => void = () => {}
  const gate = new Promise<void>((resolve) => { open = resolve })
  const looked: Array<string | undefined> = []
  // The real store, its lookup held until the test opens the gate.
  const store: RecoveryStore = {
    ...real,
    recipients: async (username, email, limit) => {
      looked.push(username ?? email)
      await gate
      return await real.recipients(username, email, limit)
    }
  }
  const limits = { max: 100, windowMs: 60_000 }
  const recovery = createRecovery({
    store,
    users: app.backends.users,
    tokens: app.backends.tokens,
    hasher: app.backends.hasher,
    audit: app.backends.audit,
    passwordPolicy: DEFAULT_PASSWORD_POLICY,
    keys: async () => ({ current: randomBytes(32), previous: [] }),
    limits: { account: createMemoryRequestLimiter(limits), identifier: createMemoryRequestLimiter(limits) },
    resetTtlMs: 1_800_000,
    inviteTtlMs: 7 * 86_400_000
  })
  const pages = Fastify({ exposeHeadRoutes: false })
  t.teardown(async () => { await pages.close() })
  await registerBodyParsing(pages, 16_384)
  await pages.register(recoveryRoutes, { recovery, preSignIn: createMemoryRequestLimiter(limits), signinTitle: 'Example', redirectAllowed: [], resetTtlMs: 1_800_000 })

  t.equal(recovery.requestReset('nobody-at-all'), undefined, 'requestReset returns nothing to wait for')
  const answers = []
  for (const identifier of ['alice', 'nobody', 'alice@example.org']) {
    const answer = await Promise.race([
      pages.inject({ method: 'POST', url: '/auth/reset', headers: FORM, payload: form({ identifier }) }),
      new Promise<never>((_resolve, reject) => { setTimeout(() => { reject(new Error('the answer waited for the lookup')) }, 5000) })
    ])
    answers.push({ status: answer.statusCode, body: answer.body, headers: { ...answer.headers, date: undefined } })
  }
  t.equal(answers[0]?.status, 200, 'answered while every lookup is still held')
  t.same(answers[1], answers[0], 'the same answer for a name no account has')
  t.same(answers[2], answers[0], 'and for an address')
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(looked.length, 4, 'the four lookups began after the answers, and wait')

  const before = await database.query<{ n: number }>('SELECT count(*)::int AS n FROM mail_deliveries')
  t.equal(before.rows[0]?.n, 0, 'nothing queued while the lookups are held')
  open()
  await recovery.settled()
  const after = await database.query<{ n: number, accounts: number }>('SELECT count(*)::int AS n, count(DISTINCT username)::int AS accounts FROM mail_deliveries')
  t.same(after.rows[0], { n: 2, accounts: 1 }, 'then alice\'s two requests queue her mail; the others nothing')
})
