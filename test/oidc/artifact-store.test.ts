import t, { type Test } from 'tap'
import { Redis } from 'ioredis'
import { createMemoryArtifactStore, createRedisArtifactStore, type ArtifactStore } from '../../src/oidc/artifact-store.js'
import { freshRedisPrefix, requireRedis } from '../../support/redis.js'

/*
 * The artifact store's one-step writes, on Redis (a script each) and in process: a consumed mark
 * (a refresh token or code kept, marked, its expiry unchanged: reuse is how a stolen one is found
 * out) and an index entry whose set never expires before its longest member.
 */

interface Opened { store: ArtifactStore, prefix: string, ttl?: (key: string) => Promise<number> }

function storeContract (t: Test, open: (t: Test) => Promise<Opened>): void {
  t.test('markConsumed: the payload keeps every field, gains `consumed`, keeps its expiry; nothing to mark is false', async (t) => {
    const { store, prefix, ttl } = await open(t)
    const key = `${prefix}RefreshToken:x`
    const payload = { kind: 'RefreshToken', grantId: 'g', amr: [], claims: {}, exp: 1_795_902_526 }
    await store.set(key, JSON.stringify(payload), 60_000)
    const before = await ttl?.(key)
    t.equal(await store.markConsumed(key, 1_795_898_926.7), true)
    t.same(JSON.parse(await store.get(key) ?? 'null'), { ...payload, consumed: 1_795_898_926 }, 'whole seconds; empty arrays and objects as they were')
    const after = await ttl?.(key)
    if (before !== undefined && after !== undefined) t.ok(after <= before && after > 50_000, 'its expiry kept')
    t.equal(await store.markConsumed(key, 1_795_898_999), true, 'marked again')
    t.equal((JSON.parse(await store.get(key) ?? 'null') as { consumed?: number }).consumed, 1_795_898_999, 'the last mark is the one read')

    await store.set(`${prefix}empty`, '{}', 60_000)
    t.equal(await store.markConsumed(`${prefix}empty`, 5), true)
    t.same(JSON.parse(await store.get(`${prefix}empty`) ?? 'null'), { consumed: 5 }, 'an empty object too')

    t.equal(await store.markConsumed(`${prefix}none`, 5), false, 'no payload: false')
    t.equal(await store.get(`${prefix}none`), null, 'and none made')
    await store.set(`${prefix}text`, 'not json', 60_000)
    t.equal(await store.markConsumed(`${prefix}text`, 5), false, 'not an object: false')
    t.equal(await store.get(`${prefix}text`), 'not json', 'and left as it was')
  })

  t.test('addMember: the set\'s expiry is raised to the longest member, never lowered', async (t) => {
    const { store, prefix, ttl } = await open(t)
    const key = `${prefix}grant:g`
    await store.addMember(key, 'a', 60_000)
    await store.addMember(key, 'b', 1_000)
    if (ttl !== undefined) t.ok(await ttl(key) > 50_000, 'a shorter member does not shorten it')
    await store.addMember(key, 'c', 120_000)
    if (ttl !== undefined) t.ok(await ttl(key) > 110_000, 'a longer one raises it')
    t.same((await store.members(key)).sort(), ['a', 'b', 'c'])
  })
}

t.test('Redis', async (t) => {
  storeContract(t, async (t) => {
    const redis = new Redis(await requireRedis())
    t.teardown(async () => { await redis.quit() })
    return { store: createRedisArtifactStore(redis), prefix: `${await freshRedisPrefix(t)}oidc:`, ttl: async (key) => await redis.pttl(key) }
  })
})
t.test('in process', async (t) => {
  // Its expiries are seen only by reading later (and a read past one drops the key): the Redis run checks them.
  storeContract(t, async () => ({ store: createMemoryArtifactStore(), prefix: 'oidc:' }))
})
