import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { HttpDriver, latencyOf, startLiveProbe, startMixedLoad, TokenBook, verdictOf, type Outcome } from '../../../support/load.js'
import { serviceEnv, startService } from '../../../support/service.js'
import { startThrowawayPostgres } from '../../../support/postgres.js'
import { startThrowawayRedis } from '../../../support/redis.js'
import {
  ACCOUNT, awaitLoginRecovery, checkBook, checkEveryAnswer, checkProbe, checkViolations, checkWindow, countVerdicts, crashMarkers,
  latencySummary, loginMany, sample
} from '../../support/checks.js'

/*
 * Postgres stopped (fast shutdown: what `pg_ctl stop -m fast` sends) under load. Logins
 * answer 503, never 701, whatever the password, and none is counted as a failure: after
 * more 503s than AUTH_MAX_FAILED_LOGINS the account is not locked and Redis holds no
 * failure counter at all. Authenticate and Logout answer from Redis as if nothing
 * happened. Postgres back on the same port: Login recovers by itself, in the same process.
 */

const MAX_FAILED_LOGINS = 3

t.test('Postgres stopped under load, then started again', async (t) => {
  const postgres = await startThrowawayPostgres(t)
  const redis = await startThrowawayRedis(t, { aof: false })
  const service = await startService(t, serviceEnv({ redisUrl: redis.url, databaseUrl: postgres.url }, ACCOUNT,
    { AUTH_MAX_FAILED_LOGINS: String(MAX_FAILED_LOGINS) }))
  const driver = new HttpDriver(service.baseUrl, { maxSockets: 8 })
  t.teardown(() => { driver.close() })

  const book = new TokenBook()
  const kept = await loginMany(t, driver, 6)
  for (const token of kept) book.add(token)
  // A reserve the load's Logouts can end while no Login can issue new ones, and one token
  // the test itself logs out while Postgres is down.
  for (const token of await loginMany(t, driver, 12)) book.add(token)
  const [spare] = await loginMany(t, driver, 1)
  if (spare === undefined) throw new Error('no spare token')
  book.add(spare)

  const origin = performance.now()
  const load = startMixedLoad({
    driver,
    book,
    username: ACCOUNT.username,
    password: ACCOUNT.password,
    workers: 5,
    mix: { authenticate: 70, login: 15, logout: 15 },
    keep: new Set([...kept, spare]),
    thinkMs: 30,
    // With the wrong-password loop below, never more attempts at once than AUTH_MAX_FAILED_LOGINS.
    maxConcurrentLogins: 1
  })
  const probe = startLiveProbe(service.baseUrl, 100)
  const wrongLogins: Outcome[] = []
  try {
    await sleep(1500)
    const stopSent = performance.now()
    await postgres.stop('fast')
    const stoppedAt = performance.now()
    t.comment(`Postgres stopped in ${(stoppedAt - stopSent).toFixed(0)} ms`)

    // While it is away, Logout works from Redis alone (claimed first, so the load's Authenticates judge it right).
    book.claim((token) => token === spare)
    const spareLogout = await driver.logout(spare)
    load.outcomes.push(spareLogout)
    t.equal(verdictOf(spareLogout), 'success', `a Logout while Postgres is down ends the token: ${spareLogout.text}`)
    book.set(spare, 'ended')

    // Wrong passwords and unknown users too, many more than the lockout threshold.
    const attempts = MAX_FAILED_LOGINS * 4
    for (let i = 0; i < attempts; i++) {
      wrongLogins.push(await driver.login(ACCOUNT.username, `wrong password ${i}`))
      wrongLogins.push(await driver.login(`nobody-${i}`, 'whatever'))
    }
    const remaining = 3000 - (performance.now() - stoppedAt)
    if (remaining > 0) await sleep(remaining)

    const restartAt = performance.now()
    await postgres.start()
    const backAt = performance.now()
    const recoveredAt = await awaitLoginRecovery(t, load, backAt, 'after Postgres came back', 20_000)
    t.comment(`Postgres away for ${(backAt - stopSent).toFixed(0)} ms; first Login 0 ${(recoveredAt - backAt).toFixed(0)} ms after it was back`)
    await sleep(1000)
    const endAt = performance.now()
    await load.stop()
    await probe.stop()

    const outcomes = load.outcomes
    t.comment(`${outcomes.length} requests: ${JSON.stringify(countVerdicts(outcomes))}; ${latencySummary(outcomes)}`)
    checkEveryAnswer(t, outcomes, origin, { faults: [{ from: stopSent, to: recoveredAt }] })
    checkViolations(t, load, origin)
    checkWindow(t, outcomes, origin, { from: origin, to: stopSent, label: 'before the stop' }, ['success', 'unauthorized'], 10)

    const away = { from: stoppedAt, to: restartAt }
    const loginsAway = checkWindow(t, outcomes.filter((o) => o.op === 'login'), origin, { ...away, label: 'Logins while Postgres is down' }, ['unavailable'], 3)
    t.ok(loginsAway.length + wrongLogins.length > MAX_FAILED_LOGINS, `more Logins answered 503 (${loginsAway.length + wrongLogins.length}) than AUTH_MAX_FAILED_LOGINS (${MAX_FAILED_LOGINS})`)
    const tokenOps = outcomes.filter((o) => o.op !== 'login')
    const answered = checkWindow(t, tokenOps, origin, { ...away, label: 'Authenticate and Logout while Postgres is down' }, ['success', 'unauthorized'], 20)
    t.ok(answered.some((o) => o.op === 'authenticate' && verdictOf(o) === 'success'), 'an active token authenticated while Postgres was down')
    t.ok(answered.some((o) => o.op === 'logout' && verdictOf(o) === 'success'), 'a token was logged out while Postgres was down')

    const notUnavailable = wrongLogins.filter((o) => verdictOf(o) !== 'unavailable')
    t.equal(notUnavailable.length, 0, `wrong passwords and unknown users got 503 too, never 701 (${wrongLogins.length} tried)\n${sample(notUnavailable, origin)}`)
    const slowWrong = wrongLogins.filter((o) => latencyOf(o) >= 1000)
    t.equal(slowWrong.length, 0, `and each within 1000 ms (${latencySummary(wrongLogins)})`)
    checkWindow(t, outcomes, origin, { from: recoveredAt, to: endAt, label: 'after the recovery' }, ['success', 'unauthorized'], 10)
    checkProbe(t, probe, origin)

    // Nothing was counted: no failure counter or lock in Redis, and the right password works.
    t.same(await redis.cli('--scan', '--pattern', '*lf:*'), '', 'Redis holds no login-failure counter or lock')
    const after = await driver.login(ACCOUNT.username, ACCOUNT.password)
    t.equal(verdictOf(after), 'success', `the account is not locked: ${after.text.slice(0, 60)}`)
    t.notOk(outcomes.some((o) => verdictOf(o) === 'too-many'), 'no 429 during the whole run')

    for (const token of kept) {
      const verdict = verdictOf(await driver.authenticate(token))
      if (verdict !== 'success') t.fail(`a token issued before the stop answered ${verdict}`)
    }
    t.pass(`the ${kept.length} tokens issued before the stop are still active`)
    await checkBook(t, driver, book, 'after the recovery')
    t.equal(service.exitStatus(), null, 'the service process never died (pool errors included)')
    t.same(crashMarkers(service.output()), [], 'nothing uncaught in its output')
  } finally {
    await load.stop()
    await probe.stop()
  }
})
