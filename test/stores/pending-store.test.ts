import { Redis } from 'ioredis'
import t, { type Test } from 'tap'
import { createMemoryPendingStore, createRedisPendingStore, type PendingStore } from '../../src/stores/pending-store.js'
import { freshRedisPrefix, keysUnder, requireRedis } from '../../support/redis.js'

/*
 * The sign-in's short-lived records (the account awaiting its code, each WebAuthn challenge):
 * the same behaviour in-process and in Redis — kept until their time, taken once, gone after.
 */

async function contract (t: Test, store: PendingStore, wait: (ms: number) => Promise<void>): Promise<void> {
  await store.put('a', 'one', 60_000)
  t.equal(await store.get('a'), 'one', 'read back')
  t.equal(await store.get('a'), 'one', 'a read leaves it')
  t.equal(await store.take('a'), 'one', 'taken')
  t.equal(await store.take('a'), null, 'a second take finds nothing: a challenge is answered once')
  t.equal(await store.get('a'), null)
  await store.put('b', 'two', 60_000)
  await store.delete('b')
  t.equal(await store.get('b'), null, 'deleted')
  await store.put('c', 'three', 50)
  await wait(120)
  t.equal(await store.get('c'), null, 'gone after its time')
  t.equal(await store.take('c'), null)
  t.equal(await store.get('never'), null)
}

t.test('in-process', async (t) => {
  let now = 1_000_000
  await contract(t, createMemoryPendingStore(() => now), async (ms) => { now += ms })
})

t.test('Redis: keys under the prefix, each with its expiry', async (t) => {
  const prefix = await freshRedisPrefix(t)
  const redis = new Redis(await requireRedis())
  t.teardown(() => { redis.disconnect() })
  const store = createRedisPendingStore(redis, prefix)
  await contract(t, store, async (ms) => { await new Promise((resolve) => setTimeout(resolve, ms)) })
  await store.put('d', 'four', 300_000)
  t.same(await keysUnder(redis, prefix), [`${prefix}signin:d`], 'one key, named under the prefix')
  const ttl = await redis.pttl(`${prefix}signin:d`)
  t.ok(ttl > 290_000 && ttl <= 300_000, `its expiry is set (${ttl} ms)`)
  redis.disconnect()
  const unreachable = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null })
  unreachable.on('error', () => {})
  t.teardown(() => { unreachable.disconnect() })
  const refused = await createRedisPendingStore(unreachable, prefix).get('x').then(() => undefined, (error: unknown) => error)
  t.equal((refused as { status?: number } | undefined)?.status, 503, 'Redis unreachable: a 503, never a pretend answer')
})
