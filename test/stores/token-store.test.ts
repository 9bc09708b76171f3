import t from 'tap'
import { createMemoryTokenStore } from '../../src/stores/memory/token-store.js'
import { createRedisTokenStore } from '../../src/stores/redis/token-store.js'
import { freshRedisPrefix, requireRedis, startThrowawayRedis } from '../../support/redis.js'
import { rejection } from '../support/rejection.js'
import { recordRevocations, tokenStoreContract, until } from './token-store.contract.js'

t.test('in-process token store', async (t) => {
  tokenStoreContract(t, async (_t, { denyTtlMs, maxTokensPerAccount }) => createMemoryTokenStore({ denyTtlMs, maxTokensPerAccount }))
})

t.test('Redis token store', async (t) => {
  const url = await requireRedis()
  tokenStoreContract(t, async (t, { denyTtlMs, maxTokensPerAccount }) => {
    const store = createRedisTokenStore({ url, keyPrefix: await freshRedisPrefix(t), denyTtlMs, maxTokensPerAccount })
    t.teardown(async () => { await store.close() })
    await store.ready()
    return store
  })

  t.test('the key holds a hash, not a token, and expires by its own PX', async (t) => {
    const keyPrefix = await freshRedisPrefix(t)
    const store = createRedisTokenStore({ url, keyPrefix, denyTtlMs: 1000 })
    t.teardown(async () => { await store.close() })
    await store.ready()
    await store.issue('h1', { accountId: '5', username: 'u', federated: false, expiresAt: 1 }, 30_000)
    const pttl = await store.redis.pttl(`${keyPrefix}t:h1`)
    t.ok(pttl > 29_000 && pttl <= 30_000, `PTTL ${pttl} is the given time to live`)
    t.equal(await store.redis.type(`${keyPrefix}a:5`), 'zset', 'the account index is a sorted set, by expiry')
    t.equal(await store.redis.object('ENCODING', `${keyPrefix}a:5`), 'listpack', 'listpack-encoded while small')
    t.ok(await store.redis.pttl(`${keyPrefix}a:5`) > 29_000, 'the index lives as long as its longest token')
  })

  t.test('an index of the earlier layout (a hash) is set aside at the next Login and still ended by revoke-all', async (t) => {
    const keyPrefix = await freshRedisPrefix(t)
    const store = createRedisTokenStore({ url, keyPrefix, denyTtlMs: 1000 })
    t.teardown(async () => { await store.close() })
    await store.ready()
    const value = '9999999999999|0|5|u'
    // Written as the version before the sorted-set index wrote them.
    await store.redis.set(`${keyPrefix}t:old1`, value, 'PX', 60_000)
    await store.redis.set(`${keyPrefix}t:old2`, value, 'PX', 60_000)
    await store.redis.hset(`${keyPrefix}a:5`, 'old1', '', 'old2', '')
    await store.issue('new1', { accountId: '5', username: 'u', federated: false, expiresAt: Date.now() + 60_000 }, 60_000)
    t.equal(await store.redis.type(`${keyPrefix}a:5`), 'zset')
    t.equal(await store.redis.type(`${keyPrefix}a:5:legacy`), 'hash', 'the old index set aside')
    t.same((await store.terminateAccount('5')).sort(), ['new1', 'old1', 'old2'])
    t.equal(await store.redis.exists(`${keyPrefix}t:old1`, `${keyPrefix}t:old2`, `${keyPrefix}t:new1`), 0)
    t.equal(await store.redis.exists(`${keyPrefix}a:5`, `${keyPrefix}a:5:legacy`, `${keyPrefix}a:5:revoking`), 0, 'nothing left behind')
  })

  t.test('a kept token listed only in an index of the earlier layout (a hash) is kept too, in the fresh index (issue 21)', async (t) => {
    const keyPrefix = await freshRedisPrefix(t)
    const store = createRedisTokenStore({ url, keyPrefix, denyTtlMs: 1000 })
    t.teardown(async () => { await store.close() })
    await store.ready()
    const value = '9999999999999|0|5|u'
    await store.redis.set(`${keyPrefix}t:old1`, value, 'PX', 60_000)
    await store.redis.set(`${keyPrefix}t:old2`, value, 'PX', 60_000)
    await store.redis.hset(`${keyPrefix}a:5`, 'old1', '', 'old2', '')
    t.same(await store.terminateAccount('5', 3, 'old1'), ['old2'])
    t.ok(await store.find('old1'), 'the kept one is active')
    t.equal(await store.redis.type(`${keyPrefix}a:5`), 'zset', 'and indexed in the current layout')
    t.ok(await store.redis.pttl(`${keyPrefix}a:5`) > 0, 'the fresh index expires')
    t.same(await store.terminateAccount('5', 4), ['old1'], 'the next revoke-all ends it')
  })

  t.test('revoke-all is exact against a racing Login: what issued before it ends, what read the new epoch stays', async (t) => {
    const keyPrefix = await freshRedisPrefix(t)
    const store = createRedisTokenStore({ url, keyPrefix, denyTtlMs: 1000 })
    t.teardown(async () => { await store.close() })
    await store.ready()
    const rec = { accountId: '8', username: 'u', federated: false, expiresAt: Date.now() + 60_000 }
    const before = Array.from({ length: 300 }, (_, i) => `b${i}`)
    for (const hash of before) await store.issue(hash, rec, 60_000, 0)
    // Logins racing the batched revoke-all: with the old epoch (refused) and the new one (kept).
    const revoking = store.terminateAccount('8', 1)
    const racing = await Promise.all(Array.from({ length: 20 }, async (_, i) => ({
      hash: `r${i}`, epoch: i % 2, issued: await store.issue(`r${i}`, rec, 60_000, i % 2)
    })))
    const ended = await revoking
    t.same(ended.filter((hash) => hash.startsWith('b')).length, 300, 'every token issued before it is ended')
    for (const login of racing) {
      const found = await store.find(login.hash)
      if (login.epoch === 0) t.ok(!login.issued && found === null, `${login.hash}: a Login on the old epoch got no token`)
      else t.ok(login.issued && found !== null, `${login.hash}: a Login on the new epoch keeps its token`)
    }
  })

  t.test('a Redis client that was handed in is not closed by the store', async (t) => {
    const { Redis } = await import('ioredis')
    const redis = new Redis(url)
    t.teardown(() => { redis.disconnect() })
    const store = createRedisTokenStore({ redis, keyPrefix: await freshRedisPrefix(t), denyTtlMs: 1000 })
    await store.close()
    t.equal(await redis.ping(), 'PONG')
  })

  t.test('revocations reach the watchers of another instance, and a cut feed says so', async (t) => {
    const keyPrefix = await freshRedisPrefix(t)
    const issuer = createRedisTokenStore({ url, keyPrefix, denyTtlMs: 5000 })
    const follower = createRedisTokenStore({ url, keyPrefix, denyTtlMs: 5000 })
    t.teardown(async () => { await issuer.close(); await follower.close() })
    await issuer.ready()
    const watcher = recordRevocations(follower)
    await until(watcher.isLive)
    await issuer.issue('h1', { accountId: '1', username: 'u', federated: false, expiresAt: 1 }, 60_000)
    await issuer.terminate('h1')
    await until(() => watcher.events.length === 1)
    t.same(watcher.events, [['h1']])

    // Cut the follower's subscription from the server side: it must report the gap, then come back.
    const clients = await issuer.redis.client('LIST') as string
    const line = clients.split('\n').find((entry) => entry.includes(`name=${keyPrefix}revoked-watcher`))
    const id = line === undefined ? undefined : /\bid=(\d+)/.exec(line)?.[1]
    t.ok(id, 'the watcher connection is named')
    await issuer.redis.client('KILL', 'ID', String(id))
    await until(() => watcher.interruptions() === 1)
    await until(watcher.isLive)
    await issuer.issue('h2', { accountId: '1', username: 'u', federated: false, expiresAt: 1 }, 60_000)
    await issuer.terminate('h2')
    await until(() => watcher.events.length === 2)
    t.same(watcher.events[1], ['h2'], 'delivered again after the reconnection')
  })

  t.test('a subscriber that stops answering (half-open) is cut by the heartbeat and reported', async (t) => {
    const server = await startThrowawayRedis(t)
    const store = createRedisTokenStore({ url: server.url, denyTtlMs: 1000 })
    t.teardown(async () => { server.signal('SIGCONT'); await store.close() })
    await store.ready()
    const watcher = recordRevocations(store)
    await until(watcher.isLive)
    // SIGSTOP: the TCP connection stays open, nothing answers — what a dropped NAT entry looks like.
    server.signal('SIGSTOP')
    const stopped = Date.now()
    await until(() => watcher.interruptions() === 1, 15_000)
    t.ok(Date.now() - stopped < 10_000, `interrupted ${Date.now() - stopped} ms after the server stopped answering`)
    server.signal('SIGCONT')
    await until(watcher.isLive, 15_000)
    t.pass('live again once the server answers')
  })

  t.test('an unreachable Redis is a 503 StatusError, quickly', async (t) => {
    const store = createRedisTokenStore({ url: 'redis://127.0.0.1:1', denyTtlMs: 1000, commandTimeoutMs: 200 })
    t.teardown(async () => { await store.close() })
    store.ready().catch(() => {})
    const started = Date.now()
    t.match(await rejection(store.find('x')), { status: 503, httpStatus: 503 })
    t.ok(Date.now() - started < 10_000, 'no hang (a bound a busy machine does not reach)')
  })
})
