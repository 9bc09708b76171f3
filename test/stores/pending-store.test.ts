import { Redis } from 'ioredis'
import t, { type Test } from 'tap'
import { createMemoryPendingStore, createRedisPendingStore, type MemoryPendingStore, type PendingStore } from '../../src/sign-in/pending-store.js'
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

t.test('in-process: an insert looks at the same few entries whatever the count', async (t) => {
  let now = 1_000_000
  let clockReads = 0
  const clock = (): number => { clockReads++; return now }
  /** A store and a way to fill it: what each insert costs (clock reads, entries examined), over 200 inserts. */
  const filling = (store: MemoryPendingStore): (count: number) => Promise<{ reads: number, examined: number }> => {
    let held = 0
    const put = async (): Promise<void> => { await store.put(`webauthn:signin:${held++}`, '1', 300_000) }
    return async (count) => {
      while (held < count) await put()
      const [reads, examined] = [clockReads, store.examined()]
      for (let i = 0; i < 200; i++) await put()
      return { reads: (clockReads - reads) / 200, examined: (store.examined() - examined) / 200 }
    }
  }

  // The clock first: a store that walks what it holds reads it for every entry.
  const byReads = createMemoryPendingStore(clock)
  const putOne = async (key: string): Promise<void> => { await byReads.put(`webauthn:signin:${key}`, '1', 300_000) }
  for (let i = 0; i < 9_000; i++) await putOne(`filled-${i}`)
  const reads = clockReads
  for (let i = 0; i < 200; i++) await putOne(`measured-${i}`)
  t.ok((clockReads - reads) / 200 <= 2, `the clock is read once an insert, not once an entry held (${(clockReads - reads) / 200} reads an insert at 9,000 entries)`)

  const cost = filling(createMemoryPendingStore(clock))
  const small = await cost(1_000)
  const large = await cost(9_000)
  t.comment(`per insert: ${JSON.stringify(small)} at 1,000 entries, ${JSON.stringify(large)} at 9,000`)
  t.ok(large.examined <= 8, `an insert examines a bounded number of entries (${large.examined} at 9,000)`)
  t.equal(large.examined, small.examined, 'the same at 9,000 entries as at 1,000')

  // Everything held expires at once: the next insert does not walk it all, and a bounded number of
  // inserts later the expired entries are all gone.
  now += 600_000
  const examined = byReads.examined()
  await putOne('after-expiry')
  t.ok(byReads.examined() - examined <= 8, `the insert after a mass expiry examined ${byReads.examined() - examined} entries`)
  for (let i = 0; i < 3_000; i++) await putOne(`fresh-${i}`)
  t.equal(byReads.size(), 3_001, 'the expired entries were pruned as new ones came, a few an insert')
})

t.test('in-process: bounded in count per purpose; a flood of one purpose never pushes out another\'s records', async (t) => {
  const now = 1_000_000
  const store = createMemoryPendingStore(() => now, 1_000)
  await store.put('pending:person', 'held', 300_000)
  for (let i = 0; i < 1_500; i++) await store.put(`webauthn:signin:flood-${i}`, '1', 300_000)
  t.equal(store.size(), 1_001, 'a thousand challenges and the one pending sign-in')
  t.equal(await store.get('webauthn:signin:flood-0'), null, 'full: the oldest challenge went first')
  t.equal(await store.get('webauthn:signin:flood-499'), null)
  t.equal(await store.get('webauthn:signin:flood-500'), '1', 'the newest thousand are kept')
  t.equal(await store.get('webauthn:signin:flood-1499'), '1')
  t.equal(await store.get('pending:person'), 'held', 'the pending sign-in (its password already proven) is untouched by the flood')
  await store.put('webauthn:signin:flood-1499', 'again', 300_000)
  // (Its first slot stays in the ring until the front reaches it, and counts against the bound.)
  t.ok(store.size() <= 1_001, `a key put again is one entry, not two (${store.size()} held)`)
  t.equal(await store.take('webauthn:signin:flood-1499'), 'again', 'with its latest value')
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
