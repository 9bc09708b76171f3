import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { describe, HttpDriver, issuedToken, latencyOf, percentile, verdictOf, type Outcome } from '../../../support/load.js'
import { serviceEnv, type ServiceProcess, startService } from '../../../support/service.js'
import { startThrowawayPostgres } from '../../../support/postgres.js'
import { startThrowawayRedis } from '../../../support/redis.js'
import { ACCOUNT, countVerdicts, crashMarkers, loginMany } from '../../support/checks.js'

/*
 * Races on one real service: concurrent Logouts of one token, Logout against a refresh
 * of the same token, and a thousand Logins of one account at once.
 *
 * The thousand Logins go in waves of WAVE, each wave all at once on connections of its
 * own: a Login holds a limiter slot from before its hash until it is settled, and at most
 * AUTH_MAX_FAILED_LOGINS attempts of one account (100 at most by config) may be in flight,
 * so a thousand at once would be refused 429 beyond the first hundred. The service runs with
 * AUTH_MAX_FAILED_LOGINS=100, a per-IP limit above a thousand and AUTH_HASH_QUEUE_MAX=1000, so
 * neither the limiter nor the argon2 queue refuses a wave: every Login of it must succeed.
 */

const LOGINS = 1000
const WAVE = 100

let service: ServiceProcess

t.before(async () => {
  const postgres = await startThrowawayPostgres(t)
  const redis = await startThrowawayRedis(t, { aof: false })
  service = await startService(t, serviceEnv({ redisUrl: redis.url, databaseUrl: postgres.url }, ACCOUNT,
    {
      AUTH_HASH_QUEUE_MAX: String(LOGINS),
      // One account from one address: its fair share of the queue raised to the whole queue.
      AUTH_HASH_ACCOUNT_QUEUED: String(LOGINS),
      AUTH_HASH_IP_QUEUED: String(LOGINS),
      // The account already holds tokens of the subtests before (the per-account cap, 1000 by default, would end some):
      // this test is about concurrent Logins, not the cap, which test/stores/token-store.contract.ts covers.
      AUTH_MAX_TOKENS_PER_ACCOUNT: String(2 * LOGINS),
      AUTH_MAX_FAILED_LOGINS: String(WAVE),
      AUTH_MAX_FAILED_LOGINS_PER_IP: String(10 * LOGINS),
      // No Redis fault here: a wave of 100 Logins and their hashes can stall a busy 2-core
      // machine's event loop past 300 ms, which would fail Redis commands that did answer.
      AUTH_REDIS_COMMAND_TIMEOUT_MS: '2000'
    }))
})

t.test('50 concurrent Logouts of one token: exactly one ends it', async (t) => {
  const driver = new HttpDriver(service.baseUrl, { maxSockets: 50 })
  t.teardown(() => { driver.close() })
  const tokens = await loginMany(t, driver, 4)
  for (const token of tokens) {
    const outcomes = await Promise.all(Array.from({ length: 50 }, async () => await driver.logout(token)))
    const counts = countVerdicts(outcomes)
    t.same(counts, { success: 1, unauthorized: 49 }, `one status 0 and 49 status 403: ${JSON.stringify(counts)}`)
    t.equal(verdictOf(await driver.authenticate(token)), 'unauthorized', 'and the token is inactive')
  }
})

t.test('Logout racing a refresh-Login of the same token never leaves it active', async (t) => {
  const driver = new HttpDriver(service.baseUrl, { maxSockets: 16 })
  t.teardown(() => { driver.close() })
  // How long a Login takes here, so the Logouts can be spread across the refresh.
  const probe = await Promise.all([1, 2].map(async () => await driver.login(ACCOUNT.username, ACCOUNT.password)))
  const loginMs = Math.max(...probe.map(latencyOf))
  const rounds = 40
  const tokens = await loginMany(t, driver, rounds)
  let refreshedFirst = 0
  let loggedOutFirst = 0
  const wrong: string[] = []
  for (let i = 0; i < rounds; i += 2) {
    await Promise.all(tokens.slice(i, i + 2).map(async (token) => {
      const [refresh, logout] = await Promise.all([
        driver.login(ACCOUNT.username, ACCOUNT.password, token),
        sleep(Math.random() * 2 * loginMs).then(async () => await driver.logout(token))
      ])
      const returned = issuedToken(refresh)
      if (returned === undefined) wrong.push(`refresh: ${describe(refresh)}`)
      // The token was active and nothing else ends it: the Logout ends it.
      if (verdictOf(logout) !== 'success') wrong.push(`logout: ${describe(logout)}`)
      if (returned === token) refreshedFirst++
      else loggedOutFirst++
      // After both: whatever the refresh answered, the logged-out token stays inactive.
      const after = verdictOf(await driver.authenticate(token))
      if (after !== 'unauthorized') wrong.push(`the logged-out token answered ${after} (refresh ${returned === token ? 'returned it' : 'issued another'})`)
      // A new token from the refresh (the old one was gone by then) is a working one.
      if (returned !== undefined && returned !== token && verdictOf(await driver.authenticate(returned)) !== 'success') {
        wrong.push('the token issued instead of the refresh does not authenticate')
      }
    }))
  }
  t.same(wrong, [], `${rounds} rounds: the token was inactive after every one`)
  t.comment(`refresh before the Logout in ${refreshedFirst} rounds, after it in ${loggedOutFirst} (Logouts spread over ${(2 * loginMs).toFixed(0)} ms)`)
  t.ok(refreshedFirst > 0 && loggedOutFirst > 0, 'both orders happened, so the race was real')
})

t.test(`${LOGINS} Logins of one account, ${WAVE} at once, all get distinct working tokens`, async (t) => {
  const driver = new HttpDriver(service.baseUrl, { maxSockets: WAVE, timeoutMs: 60_000 })
  t.teardown(() => { driver.close() })
  const started = performance.now()
  const outcomes: Outcome[] = []
  for (let wave = 0; wave < LOGINS / WAVE; wave++) {
    outcomes.push(...await Promise.all(Array.from({ length: WAVE }, async () => await driver.login(ACCOUNT.username, ACCOUNT.password))))
  }
  const tookMs = performance.now() - started
  const latencies = outcomes.map(latencyOf)
  t.comment(`${LOGINS} Logins in ${(tookMs / 1000).toFixed(1)} s (p50 ${percentile(latencies, 50).toFixed(0)} ms, max ${Math.max(...latencies).toFixed(0)} ms)`)
  const counts = countVerdicts(outcomes)
  const failed = outcomes.filter((outcome) => verdictOf(outcome) !== 'success')
  t.same(counts, { success: LOGINS }, `every Login answered 0\n${failed.slice(0, 3).map((outcome) => describe(outcome, started)).join('\n')}`)
  const tokens = outcomes.map(issuedToken).filter((token): token is string => token !== undefined)
  t.equal(new Set(tokens).size, tokens.length, `all ${tokens.length} tokens are distinct`)

  const check = new HttpDriver(service.baseUrl, { maxSockets: 16 })
  t.teardown(() => { check.close() })
  let working = 0
  const otherwise: string[] = []
  for (let i = 0; i < tokens.length; i += 50) {
    const verdicts = await Promise.all(tokens.slice(i, i + 50).map(async (token) => {
      // A check that got no answer (a timeout or a 503 on a loaded machine) says nothing of the
      // token: asked again, one at a time. Only Success and Unauthorized are answers.
      let verdict = verdictOf(await check.authenticate(token))
      for (let retry = 0; retry < 3 && verdict !== 'success' && verdict !== 'unauthorized'; retry++) verdict = verdictOf(await check.authenticate(token))
      return verdict
    }))
    working += verdicts.filter((verdict) => verdict === 'success').length
    otherwise.push(...verdicts.filter((verdict) => verdict !== 'success'))
  }
  t.equal(working, tokens.length, `and every one authenticates (otherwise: ${JSON.stringify(otherwise.slice(0, 10))})`)
})

t.test('the service ran throughout', async (t) => {
  t.same(crashMarkers(service.output()), [], 'nothing uncaught in its output')
  t.equal(service.exitStatus(), null, 'the process that was started still runs')
})
