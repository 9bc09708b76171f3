import t from 'tap'
import { generateToken } from '@auth-token-service/protocol/token'
import { buildGuardedApp, seededRedis, untilGroups, warm } from '../../guard/support.js'

/*
 * A membership change takes effect in a guard's cache within the revocation feed's bound, 1 s
 * (api-contract, "Groups and access rules"): the service rewrites the records of the account's
 * tokens and publishes their hashes, as here. Direct mode, from a warm cache; each round changes
 * the set and times the first request that sees the new one. A duration, so the timing set
 * (test/guard/groups.test.ts judges the same without the bound, and never a refusal on the way).
 */

const LIMIT_MS = 1000
const SETS: ReadonlyArray<readonly string[]> = [['dev', 'ops'], ['dev'], [], ['ops'], ['a', 'b', 'ops']]

t.test(`direct mode: a membership change reaches the guard's cache within ${LIMIT_MS} ms`, async (t) => {
  const redis = await seededRedis(t)
  const guarded = await buildGuardedApp(t, { redis: redis.redis, keyPrefix: redis.keyPrefix, cache: { maxEntries: 100, ttlMs: 60_000 } })
  const token = generateToken('7')
  await redis.seed(token, { groups: ['dev'] })
  const delays: number[] = []
  for (const groups of SETS) {
    await warm(guarded, redis.verifications, token)
    const started = performance.now()
    await redis.regroup(token, groups)
    delays.push(await untilGroups(t, guarded, token, groups, started, LIMIT_MS))
  }
  t.comment(`direct: a membership change to the cache's new answer: ${delays.map((d) => d.toFixed(1)).join(', ')} ms (max ${Math.max(...delays).toFixed(1)})`)
  t.ok(Math.max(...delays) < LIMIT_MS, `every change within ${LIMIT_MS} ms`)
})
