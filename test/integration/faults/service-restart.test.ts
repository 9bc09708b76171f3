import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { HttpDriver, issuedToken, startMixedLoad, TokenBook, verdictOf } from '../../../support/load.js'
import { serviceEnv, startService } from '../../../support/service.js'
import { startThrowawayPostgres } from '../../../support/postgres.js'
import { startThrowawayRedis } from '../../../support/redis.js'
import {
  ACCOUNT, checkBook, checkEveryAnswer, checkViolations, checkWindow, countVerdicts, crashMarkers, latencySummary, loginMany, sample
} from '../../support/checks.js'

/*
 * The service restarted under load: SIGTERM, wait for it to exit, start it again on the
 * same port. A request may find no listener (no answer at all), but every request that
 * got response headers got a correct and complete answer (no 503, no 500, nothing cut
 * off); every token issued before, by any Login of the run, still authenticates after
 * the restart unless it was logged out (state lives in Redis, and nothing was issued
 * that was not stored); the old process exits 0 after draining.
 */

t.test('the service restarted (SIGTERM, then started again) under load', async (t) => {
  const postgres = await startThrowawayPostgres(t)
  const redis = await startThrowawayRedis(t, { aof: false })
  // No Redis fault here: a generous command timeout, so a start-up hiccup of the new process
  // on a busy machine is not mistaken for a Redis outage (that would be a 503, which this test forbids).
  const env = serviceEnv({ redisUrl: redis.url, databaseUrl: postgres.url }, ACCOUNT, { AUTH_REDIS_COMMAND_TIMEOUT_MS: '2000' })
  const first = await startService(t, env)
  const driver = new HttpDriver(first.baseUrl, { maxSockets: 8 })
  t.teardown(() => { driver.close() })

  const book = new TokenBook()
  const kept = await loginMany(t, driver, 8)
  for (const token of kept) book.add(token)

  const origin = performance.now()
  const load = startMixedLoad({
    driver,
    book,
    username: ACCOUNT.username,
    password: ACCOUNT.password,
    workers: 6,
    mix: { authenticate: 60, login: 25, logout: 15 },
    keep: new Set(kept),
    thinkMs: 10,
    backoffMs: 20
  })
  try {
    await sleep(2000)
    const termAt = performance.now()
    const ended = await first.stop('SIGTERM', 20_000)
    const exitedAt = performance.now()
    t.same(ended, { code: 0, signal: null }, `the first process drained and exited 0 after SIGTERM (in ${(exitedAt - termAt).toFixed(0)} ms)`)
    t.same(crashMarkers(first.output()), [], 'nothing uncaught in its output')
    const second = await startService(t, env, { port: first.port })
    const upAt = performance.now()
    t.comment(`down from +${(termAt - origin).toFixed(0)} ms to +${(upAt - origin).toFixed(0)} ms (exit after ${(exitedAt - termAt).toFixed(0)} ms, start ${(upAt - exitedAt).toFixed(0)} ms)`)
    await sleep(2000)
    const endAt = performance.now()
    await load.stop()

    const outcomes = load.outcomes
    t.comment(`${outcomes.length} requests: ${JSON.stringify(countVerdicts(outcomes))}; ${latencySummary(outcomes)}`)
    // No 503 and no 429 anywhere: accepted requests are served by a process that still has its backends.
    checkEveryAnswer(t, outcomes, origin, { faults: [], allowNoAnswer: true })
    checkViolations(t, load, origin)
    const answered = outcomes.filter((o) => o.answered)
    checkWindow(t, answered, origin, { from: origin, to: endAt, label: 'every answered request' }, ['success', 'unauthorized'], 50)
    const refused = outcomes.filter((o) => !o.answered)
    const refusedOutside = refused.filter((o) => o.endedAt < termAt || o.startedAt > upAt)
    t.equal(refusedOutside.length, 0, `requests without an answer (${refused.length}) all fell while the service restarted\n${sample(refusedOutside, origin)}`)
    const drained = outcomes.filter((o) => o.answered && o.startedAt < exitedAt && o.endedAt > termAt)
    t.comment(`${drained.length} requests were in flight or arrived during the drain and were answered; ${refused.length} found no listener`)
    t.ok(outcomes.some((o) => o.answered && o.startedAt > upAt), 'the second process served the load')

    // Every token any Login returned (before, during or after the restart) is stored: active unless logged out.
    const issued = outcomes.map(issuedToken).filter((token): token is string => token !== undefined)
    t.ok(issued.length >= 10, `${issued.length} tokens issued under load`)
    await checkBook(t, driver, book, 'after the restart')
    for (const token of kept) {
      const verdict = verdictOf(await driver.authenticate(token))
      if (verdict !== 'success') t.fail(`a token issued before the restart answered ${verdict}`)
    }
    t.pass(`the ${kept.length} tokens issued before the load are still active`)
    t.equal(second.exitStatus(), null, 'the second process runs on')
  } finally {
    await load.stop()
  }
})
