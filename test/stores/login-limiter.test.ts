import { Redis } from 'ioredis'
import t, { type Test } from 'tap'
import { keyLayout } from '@auth-token-service/protocol/layout'
import type { LoginLimits } from '../../src/core/stores/login-limiter.js'
import { createMemoryLoginLimiter } from '../../src/core/stores/memory/login-limiter.js'
import { createRedisLoginLimiter } from '../../src/core/stores/redis/login-limiter.js'
import { rejection } from '../support/rejection.js'
import { freshRedisPrefix, keysUnder, requireRedis } from '../../support/redis.js'
import { loginLimiterContract } from './login-limiter.contract.js'

const LIMITS: LoginLimits = { maxFailures: 2, lockoutMs: 30_000, maxLockoutMs: 60_000, maxFailuresPerIp: 5, ipWindowMs: 20_000 }

async function redisClient (t: Test, url: string): Promise<Redis> {
  const redis = new Redis(url)
  t.teardown(() => { redis.disconnect() })
  return redis
}

t.test('in-process login limiter', async (t) => {
  loginLimiterContract(t, async (_t, limits) => createMemoryLoginLimiter(limits))
})

t.test('Redis login limiter', async (t) => {
  const url = await requireRedis()
  loginLimiterContract(t, async (t, limits) =>
    createRedisLoginLimiter(await redisClient(t, url), limits, await freshRedisPrefix(t)))

  t.test('keys are digests under the prefix: no username or address appears in Redis', async (t) => {
    const redis = await redisClient(t, url)
    const prefix = await freshRedisPrefix(t)
    const limiter = createRedisLoginLimiter(redis, LIMITS, prefix)
    await limiter.recordFailure('alice*{x}\r\n', '198.51.100.23')
    await limiter.recordFailure('alice*{x}\r\n', '198.51.100.23')
    const keys = await keysUnder(redis, prefix)
    t.equal(keys.length, 3, 'account state, its lock and the address counter')
    const escaped = keyLayout(prefix).bucketPrefix('??').replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace('\\?\\?', '[A-P][A-Za-z0-9_-]')
    for (const key of keys) t.match(key, new RegExp(`^${escaped}lf:[ali]:[A-Za-z0-9_-]{43}$`), `${key} is a digest key in its bucket`)
    t.notOk(keys.some((key) => key.includes('alice') || key.includes('198.51')), 'no raw username or address in a key name')
  })

  t.test('every key expires by itself: lock by its length, address counter by the window, state after a day', async (t) => {
    const redis = await redisClient(t, url)
    const prefix = await freshRedisPrefix(t)
    const limiter = createRedisLoginLimiter(redis, LIMITS, prefix)
    await limiter.recordFailure('bob', '198.51.100.24')
    await limiter.recordFailure('bob', '198.51.100.24')
    const keys = await keysUnder(redis, prefix)
    const ttlOf = async (kind: 'a' | 'l' | 'i'): Promise<number> => {
      const key = keys.find((k) => k.includes(`lf:${kind}:`))
      return key === undefined ? -3 : await redis.pttl(key)
    }
    const lock = await ttlOf('l')
    t.ok(lock > LIMITS.lockoutMs - 2000 && lock <= LIMITS.lockoutMs, `lock PTTL ${lock} is the lock's length`)
    const ip = await ttlOf('i')
    t.ok(ip > LIMITS.ipWindowMs - 2000 && ip <= LIMITS.ipWindowMs, `address PTTL ${ip} is the window`)
    const state = await ttlOf('a')
    t.ok(state > 23 * 60 * 60 * 1000 && state <= 24 * 60 * 60 * 1000, `account state PTTL ${state} is about a day`)
  })

  t.test('a refused check writes nothing', async (t) => {
    const redis = await redisClient(t, url)
    const prefix = await freshRedisPrefix(t)
    const limiter = createRedisLoginLimiter(redis, LIMITS, prefix)
    for (let i = 0; i < 5; i++) await limiter.check(`carol${i}`, '198.51.100.25')
    t.same(await keysUnder(redis, prefix), [], 'checks alone leave no key')
  })

  t.test('an unreachable Redis is a 503 StatusError, quickly, for every operation', async (t) => {
    const redis = new Redis('redis://127.0.0.1:1', { commandTimeout: 200, maxRetriesPerRequest: 0, enableOfflineQueue: false, lazyConnect: true })
    t.teardown(() => { redis.disconnect() })
    redis.on('error', () => {})
    const limiter = createRedisLoginLimiter(redis, LIMITS, 'unreachable:')
    // Not timed (a busy machine stretches any duration): a hang would fail the test by tap's timeout.
    t.match(await rejection(limiter.check('dave', '198.51.100.26')), { status: 503, httpStatus: 503 }, 'check')
    t.match(await rejection(limiter.recordFailure('dave', '198.51.100.26')), { status: 503, httpStatus: 503 }, 'recordFailure')
    t.match(await rejection(limiter.recordSuccess('dave')), { status: 503, httpStatus: 503 }, 'recordSuccess')
  })
})
