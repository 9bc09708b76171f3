import { Redis } from 'ioredis'
import t, { type Test } from 'tap'
import { keyLayout } from '@auth-token-service/protocol/layout'
import type { RequestLimiter, RequestLimits, RequestVerdict } from '../../src/core/stores/request-limiter.js'
import { createMemoryRequestLimiter } from '../../src/core/stores/memory/request-limiter.js'
import { createRedisRequestLimiter } from '../../src/core/stores/redis/request-limiter.js'
import { freshRedisPrefix, keysUnder, requireRedis } from '../../support/redis.js'

/*
 * The per-client request limit of the routes anyone may call before signing in: the same rules
 * in-process and on Redis (a fixed window per client and scope, every request counted, a refused
 * one counting nothing), the Redis keys digests in their buckets, each expiring with its window.
 */

type Make = (t: Test, limits: RequestLimits) => Promise<{ limiter: RequestLimiter, wait: (ms: number) => Promise<void> }>

const allowed = (verdict: RequestVerdict): boolean => verdict.allowed
const retryAfter = (verdict: RequestVerdict): number => verdict.allowed ? 0 : verdict.retryAfterMs

function contract (t: Test, make: Make): void {
  t.test('max requests per window, then refused with the window\'s remaining time', async (t) => {
    const { limiter } = await make(t, { max: 3, windowMs: 60_000 })
    const verdicts = []
    for (let i = 0; i < 5; i++) verdicts.push(await limiter.hit('options', '198.51.100.1'))
    t.same(verdicts.map(allowed), [true, true, true, false, false], 'three, then refused')
    const ms = retryAfter(verdicts[3] as RequestVerdict)
    t.ok(ms > 55_000 && ms <= 60_000, `retry after what is left of the window (${ms} ms)`)
    t.ok(allowed(await limiter.hit('options', '198.51.100.2')), 'another client: its own count')
    t.ok(allowed(await limiter.hit('code', '198.51.100.1')), 'another scope: its own count')
  })

  t.test('a new window after the last one ended', async (t) => {
    const { limiter, wait } = await make(t, { max: 2, windowMs: 200 })
    t.ok(allowed(await limiter.hit('options', 'c')))
    t.ok(allowed(await limiter.hit('options', 'c')))
    t.notOk(allowed(await limiter.hit('options', 'c')), 'refused in the window')
    await wait(300)
    t.ok(allowed(await limiter.hit('options', 'c')), 'allowed again once it ended')
    t.ok(allowed(await limiter.hit('options', 'c')))
    t.notOk(allowed(await limiter.hit('options', 'c')), 'and counted from one again')
  })

  t.test('refused requests do not extend the window', async (t) => {
    const { limiter, wait } = await make(t, { max: 1, windowMs: 300 })
    t.ok(allowed(await limiter.hit('options', 'd')))
    for (let i = 0; i < 5; i++) {
      t.notOk(allowed(await limiter.hit('options', 'd')))
      await wait(40)
    }
    await wait(150)
    t.ok(allowed(await limiter.hit('options', 'd')), 'the window ended when it was due, whatever was refused in it')
  })

  t.test('concurrent requests are counted exactly', async (t) => {
    const { limiter } = await make(t, { max: 10, windowMs: 60_000 })
    const verdicts = await Promise.all(Array.from({ length: 25 }, async () => await limiter.hit('options', 'e')))
    t.equal(verdicts.filter(allowed).length, 10, 'ten of 25 at once allowed, no more')
  })
}

t.test('in-process request limiter', async (t) => {
  contract(t, async (_t, limits) => {
    let now = 1_000_000
    return { limiter: createMemoryRequestLimiter(limits, () => now), wait: async (ms) => { now += ms } }
  })

  t.test('bounded in clients: past the bound the oldest count is forgotten, at a bounded cost', async (t) => {
    const now = 1_000_000
    const limiter = createMemoryRequestLimiter({ max: 1, windowMs: 60_000 }, () => now, 100)
    for (let i = 0; i < 150; i++) t.ok(allowed(await limiter.hit('options', `client-${i}`)), `client-${i}`, { diagnostic: false })
    t.notOk(allowed(await limiter.hit('options', 'client-149')), 'a recent client is still counted')
    t.ok(allowed(await limiter.hit('options', 'client-0')), 'the oldest was forgotten (a new window)')
  })
})

t.test('Redis request limiter', async (t) => {
  const url = await requireRedis()
  const client = async (t: Test): Promise<Redis> => {
    const redis = new Redis(url)
    t.teardown(() => { redis.disconnect() })
    return redis
  }
  contract(t, async (t, limits) => ({
    limiter: createRedisRequestLimiter(await client(t), limits, await freshRedisPrefix(t)),
    wait: async (ms) => { await new Promise((resolve) => setTimeout(resolve, ms)) }
  }))

  t.test('keys are digests in their buckets, each expiring with its window; a refused request writes nothing', async (t) => {
    const redis = await client(t)
    const prefix = await freshRedisPrefix(t)
    const limiter = createRedisRequestLimiter(redis, { max: 2, windowMs: 30_000 }, prefix)
    await limiter.hit('passkey-options', '198.51.100.23*{x}\r\n')
    await limiter.hit('passkey-options', '198.51.100.23*{x}\r\n')
    const keys = await keysUnder(redis, prefix)
    t.equal(keys.length, 1, 'one key a client and scope')
    const key = keys[0] ?? ''
    const bucket = keyLayout(prefix).bucketPrefix('??').replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace('\\?\\?', '[A-P][A-Za-z0-9_-]')
    t.match(key, new RegExp(`^${bucket}rl:passkey-options:[A-Za-z0-9_-]{43}$`), `${key}: a digest key in its bucket`)
    t.notOk(key.includes('198.51'), 'no raw address in the key name')
    const ttl = await redis.pttl(key)
    t.ok(ttl > 28_000 && ttl <= 30_000, `it expires with the window (${ttl} ms)`)
    // WATCH sees any write to the key (a script's too): an EXEC after one is aborted (null).
    const watcher = await client(t)
    const unwritten = async (what: () => Promise<unknown>): Promise<boolean> => {
      await watcher.watch(key)
      await what()
      return await watcher.multi().ping().exec() !== null
    }
    t.ok(await unwritten(async () => {
      for (let i = 0; i < 5; i++) t.notOk(allowed(await limiter.hit('passkey-options', '198.51.100.23*{x}\r\n')), 'refused')
    }), 'five refused requests wrote nothing to the key (no AOF write, no fsync)')
    t.equal(await redis.get(key), '2', 'the count stays at the limit')
    await redis.pexpire(key, 1)
    await new Promise((resolve) => setTimeout(resolve, 20))
    t.notOk(await unwritten(async () => { t.ok(allowed(await limiter.hit('passkey-options', '198.51.100.23*{x}\r\n')), 'a new window') }), 'an allowed request does write (the check can tell)')
  })

  t.test('Redis unreachable: 503, never a request waved through', async (t) => {
    const unreachable = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null })
    unreachable.on('error', () => {})
    t.teardown(() => { unreachable.disconnect() })
    const refused = await createRedisRequestLimiter(unreachable, { max: 1, windowMs: 1000 }, await freshRedisPrefix(t)).hit('x', 'y').then(() => undefined, (error: unknown) => error)
    t.equal((refused as { status?: number } | undefined)?.status, 503)
  })
})
