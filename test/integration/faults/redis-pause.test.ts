import { Redis } from 'ioredis'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { HttpDriver, startLiveProbe, startMixedLoad, TokenBook, verdictOf, type Outcome } from '../../../support/load.js'
import { serviceEnv, startService } from '../../../support/service.js'
import { startThrowawayPostgres } from '../../../support/postgres.js'
import { startThrowawayRedis } from '../../../support/redis.js'
import {
  ACCOUNT, awaitLoginRecovery, checkBook, checkEveryAnswer, checkProbe, checkViolations, checkWindow, countVerdicts, crashMarkers,
  latencySummary, loginMany, sample, tryEachOperation, type FaultWindow
} from '../../support/checks.js'

/*
 * Redis alive but not answering for 3 s, far longer than the service's 300 ms command
 * timeout: first `CLIENT PAUSE 3000 ALL` (Redis holds every client's commands), then
 * `DEBUG SLEEP 3` (the whole server stops). Every request meanwhile is a 503 within 1 s,
 * 503s happen only around the stall, and the service recovers by itself each time.
 * Both are sent on a connection opened beforehand, so the stall starts when the test says.
 */

const PAUSE_MS = 3000
const COMMAND_TIMEOUT_MS = 300

t.test('Redis paused, then asleep, for longer than the command timeout', async (t) => {
  const postgres = await startThrowawayPostgres(t)
  const redis = await startThrowawayRedis(t, { aof: false })
  const service = await startService(t, serviceEnv({ redisUrl: redis.url, databaseUrl: postgres.url }, ACCOUNT,
    { AUTH_REDIS_COMMAND_TIMEOUT_MS: String(COMMAND_TIMEOUT_MS) }))
  const driver = new HttpDriver(service.baseUrl, { maxSockets: 8 })
  t.teardown(() => { driver.close() })
  const operator = new Redis(redis.url, { maxRetriesPerRequest: 0 })
  t.teardown(() => { operator.disconnect() })
  await operator.ping()

  const book = new TokenBook()
  const kept = await loginMany(t, driver, 6)
  for (const token of kept) book.add(token)

  const origin = performance.now()
  const load = startMixedLoad({
    driver,
    book,
    username: ACCOUNT.username,
    password: ACCOUNT.password,
    workers: 5,
    mix: { authenticate: 70, login: 15, logout: 15 },
    keep: new Set(kept),
    thinkMs: 5
  })
  const probe = startLiveProbe(service.baseUrl, 100)
  try {
    await sleep(1500)

    // CLIENT PAUSE: it takes effect between `sent` and `acked`, and lasts PAUSE_MS from then.
    const pauseSent = performance.now()
    t.equal(await operator.call('CLIENT', 'PAUSE', String(PAUSE_MS), 'ALL'), 'OK', 'CLIENT PAUSE 3000 ALL')
    const pauseAcked = performance.now()
    load.outcomes.push(...await tryEachOperation(driver, kept[0] ?? ''))
    const pause = {
      // Sent after it began and early enough to time out before it ends: must be a 503.
      strict: { from: pauseAcked, to: pauseSent + PAUSE_MS - COMMAND_TIMEOUT_MS - 100 },
      // The only requests that may get a 503 at all: those in flight at some moment of it.
      loose: { from: pauseSent, to: pauseAcked + PAUSE_MS + 300 }
    }
    const pauseRecovered = await awaitLoginRecovery(t, load, pause.loose.to, 'after the pause')
    await sleep(1000)

    // DEBUG SLEEP: the server itself stops; its reply comes when it wakes.
    const sleepSent = performance.now()
    const [slept] = await Promise.all([
      operator.call('DEBUG', 'SLEEP', String(PAUSE_MS / 1000)),
      sleep(250).then(async () => { load.outcomes.push(...await tryEachOperation(driver, kept[0] ?? '')) })
    ])
    t.equal(slept, 'OK', 'DEBUG SLEEP 3')
    const sleepReplied = performance.now()
    t.ok(sleepReplied - sleepSent >= PAUSE_MS - 50, `Redis slept ${(sleepReplied - sleepSent).toFixed(0)} ms`)
    const asleep = {
      strict: { from: sleepSent + 200, to: sleepSent + PAUSE_MS - COMMAND_TIMEOUT_MS - 100 },
      loose: { from: sleepSent, to: sleepReplied + 300 }
    }
    const sleepRecovered = await awaitLoginRecovery(t, load, asleep.loose.to, 'after the sleep')
    // A second of load after it, and at least a dozen requests (a loaded machine sends fewer in a second).
    const sentAfter = (): number => load.outcomes.filter((outcome) => outcome.startedAt >= sleepRecovered).length
    await sleep(1000)
    for (let waited = 0; sentAfter() < 12 && waited < 10_000; waited += 100) await sleep(100)
    const endAt = performance.now()
    await load.stop()
    await probe.stop()

    const outcomes = load.outcomes
    t.comment(`${outcomes.length} requests: ${JSON.stringify(countVerdicts(outcomes))}; ${latencySummary(outcomes)}`)
    t.comment(`recovered ${(pauseRecovered - pause.loose.to).toFixed(0)} ms after the pause and ${(sleepRecovered - asleep.loose.to).toFixed(0)} ms after the sleep`)
    const faults: FaultWindow[] = [{ from: pauseSent, to: pauseRecovered }, { from: sleepSent, to: sleepRecovered }]
    checkEveryAnswer(t, outcomes, origin, { faults })
    checkViolations(t, load, origin)

    const paused = checkWindow(t, outcomes, origin, { ...pause.strict, label: 'while Redis is paused' }, ['unavailable'], 10)
    const sleeping = checkWindow(t, outcomes, origin, { ...asleep.strict, label: 'while Redis sleeps' }, ['unavailable'], 10)
    for (const [label, inside] of [['paused', paused], ['asleep', sleeping]] as const) {
      const ops = new Set(inside.map((outcome) => outcome.op))
      t.ok(ops.has('authenticate') && ops.has('login') && ops.has('logout'), `while Redis is ${label}, Authenticate, Login and Logout were all tried (${[...ops].join(', ')})`)
    }
    // Bounded: no 503 but for a request in flight during a stall (the service did not stay broken
    // afterwards). In flight, not sent: a Login sent 1.4 s before the pause waited for its hash
    // on a loaded machine (CI, beside another suite), then met the paused Redis: a right 503.
    const stray: Outcome[] = outcomes.filter((outcome) => verdictOf(outcome) === 'unavailable' &&
      [pause.loose, asleep.loose].every((window) => outcome.endedAt < window.from || outcome.startedAt > window.to))
    t.equal(stray.length, 0, `503s only for requests in flight during a stall (${outcomes.filter((o) => verdictOf(o) === 'unavailable').length} in all)\n${sample(stray, origin)}`)
    checkWindow(t, outcomes, origin, { from: sleepRecovered, to: endAt, label: 'after both stalls' }, ['success', 'unauthorized'], 10)
    // Only failures count: Logins that got a 503 during a stall hold no limiter slot afterwards.
    const refused = outcomes.filter((outcome) => verdictOf(outcome) === 'too-many')
    t.equal(refused.length, 0, `no Login was refused 429 (the account never failed a password)\n${sample(refused, origin)}`)
    checkProbe(t, probe, origin)

    for (const token of kept) {
      const verdict = verdictOf(await driver.authenticate(token))
      if (verdict !== 'success') t.fail(`a token issued before the stalls answered ${verdict}`)
    }
    t.pass(`the ${kept.length} tokens issued before the stalls are still active`)
    await checkBook(t, driver, book, 'after the stalls')
    t.equal(service.exitStatus(), null, 'the service process is still the one that was started')
    t.same(crashMarkers(service.output()), [], 'nothing uncaught in its output')
  } finally {
    await load.stop()
    await probe.stop()
  }
})
