import { Redis } from 'ioredis'
import t from 'tap'
import { generateToken } from '@auth-token-service/protocol/token'
import { describe, HttpDriver, latencyOf, verdictOf, type Outcome } from '../../../support/load.js'
import { serviceEnv, startService } from '../../../support/service.js'
import { startThrowawayPostgres } from '../../../support/postgres.js'
import { startThrowawayRedis } from '../../../support/redis.js'
import { ACCOUNT, ANSWER_BOUND_MS, countVerdicts, crashMarkers, loginMany } from '../../support/checks.js'

/*
 * Redis full (`maxmemory` 3 MB, `maxmemory-policy noeviction`, filled with junk until a
 * write is refused): a Login, which must store a token (or count a failure), answers
 * 503; existing tokens still authenticate; nothing is a 500. With the junk gone, Logins
 * work again without a restart.
 */

const MAXMEMORY = 3 * 1024 * 1024

t.test('Redis out of memory (noeviction)', async (t) => {
  const postgres = await startThrowawayPostgres(t)
  const redis = await startThrowawayRedis(t, { aof: false, maxmemoryBytes: MAXMEMORY })
  const service = await startService(t, serviceEnv({ redisUrl: redis.url, databaseUrl: postgres.url }, ACCOUNT))
  const driver = new HttpDriver(service.baseUrl, { maxSockets: 8 })
  t.teardown(() => { driver.close() })
  const tokens = await loginMany(t, driver, 6)

  // Fill it with 16 KiB values until Redis refuses one. Memory then hovers at the limit
  // (client buffers come and go), so the limit is then set 512 KiB under what is used:
  // from there on every write that may grow memory is refused, steadily.
  const junk = new Redis(redis.url, { maxRetriesPerRequest: 0 })
  t.teardown(() => { junk.disconnect() })
  let written = 0
  let refusal = ''
  while (refusal === '' && written < 1000) {
    refusal = await junk.set(`junk:${written}`, 'x'.repeat(16 * 1024)).then(() => { written++; return '' }, (error: Error) => error.message)
  }
  t.match(refusal, /^OOM /, `Redis refused a write after ${written} junk values of 16 KiB: ${refusal}`)
  const used = Number(/used_memory:(\d+)/.exec(await junk.info('memory'))?.[1])
  await junk.config('SET', 'maxmemory', String(Math.min(MAXMEMORY, used) - 512 * 1024))
  const probe = await junk.set('junk:probe', 'x').then(() => 'accepted', (error: Error) => error.message)
  t.match(probe, /^OOM /, `and now refuses every write (used ${used} bytes): ${probe}`)

  const outcomes: Outcome[] = []
  const record = (outcome: Outcome): Outcome => { outcomes.push(outcome); return outcome }

  for (let i = 0; i < 5; i++) {
    const login = record(await driver.login(ACCOUNT.username, ACCOUNT.password))
    t.equal(verdictOf(login), 'unavailable', `a Login that must store a token answers 503: ${describe(login)}`)
  }
  const wrong = record(await driver.login(ACCOUNT.username, 'not the password'))
  t.equal(verdictOf(wrong), 'unavailable', `a wrong password, whose failure cannot be counted, answers 503 too: ${describe(wrong)}`)
  for (const token of tokens.slice(1)) {
    const verdict = verdictOf(record(await driver.authenticate(token)))
    if (verdict !== 'success') t.fail(`an existing token answered ${verdict}`)
  }
  t.pass(`the ${tokens.length - 1} existing tokens still authenticate`)
  t.equal(verdictOf(record(await driver.authenticate(generateToken('1')))), 'unauthorized', 'an unknown token is still 403')

  // A Logout only deletes: it may go through (and then the token is ended) or be a 503, never a 500.
  const first = tokens[0] ?? ''
  const logout = record(await driver.logout(first))
  const logoutVerdict = verdictOf(logout)
  t.ok(logoutVerdict === 'success' || logoutVerdict === 'unavailable', `a Logout answers 0 or 503: ${describe(logout)}`)
  t.equal(verdictOf(record(await driver.authenticate(first))), logoutVerdict === 'success' ? 'unauthorized' : 'success',
    'and the token is ended exactly when the Logout said so')

  t.notOk(outcomes.some((outcome) => outcome.httpStatus >= 500 && outcome.httpStatus !== 503), 'no 500 of any kind')
  const slow = outcomes.filter((outcome) => latencyOf(outcome) >= ANSWER_BOUND_MS)
  t.equal(slow.length, 0, `every answer within ${ANSWER_BOUND_MS} ms`)
  t.comment(`while full: ${JSON.stringify(countVerdicts(outcomes))}`)

  // Room again: Logins work without a restart.
  let cursor = '0'
  do {
    const [next, keys] = await junk.scan(cursor, 'MATCH', 'junk:*', 'COUNT', 1000)
    if (keys.length > 0) await junk.del(...keys)
    cursor = next
  } while (cursor !== '0')
  const again = await driver.login(ACCOUNT.username, ACCOUNT.password)
  t.equal(verdictOf(again), 'success', `with memory freed, Login works again: ${describe(again)}`)
  t.equal(service.exitStatus(), null, 'the service ran throughout')
  t.same(crashMarkers(service.output()), [], 'nothing uncaught in its output')
})
