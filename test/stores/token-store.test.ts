import t from 'tap'
import { createMemoryTokenStore } from '../../src/core/stores/memory/token-store.js'
import { keyLayout } from '@auth-token-service/protocol/layout'
import { createRedisTokenStore } from '../../src/core/stores/redis/token-store.js'
import { accountBucket, generateToken, hashToken, sha256 } from '@auth-token-service/protocol/token'
import { freshRedisPrefix, requireRedis, startThrowawayRedis, TEST_REDIS_COMMAND_TIMEOUT_MS } from '../../support/redis.js'
import { rejection } from '../support/rejection.js'
import { recordRevocations, tokenStoreContract, until } from './token-store.contract.js'

/** A token hash as the service makes them: a token of the account's bucket. */
const hashOf = (accountId: string): string => hashToken(generateToken(accountId))

t.test('in-process token store', async (t) => {
  tokenStoreContract(t, async (_t, { denyTtlMs, maxTokensPerAccount, idleTimeoutMs }) => createMemoryTokenStore({ denyTtlMs, maxTokensPerAccount, idleTimeoutMs }))
})

t.test('Redis token store', async (t) => {
  const url = await requireRedis()
  tokenStoreContract(t, async (t, { denyTtlMs, maxTokensPerAccount, idleTimeoutMs }) => {
    const store = createRedisTokenStore({ url, keyPrefix: await freshRedisPrefix(t), denyTtlMs, maxTokensPerAccount, idleTimeoutMs, commandTimeoutMs: TEST_REDIS_COMMAND_TIMEOUT_MS })
    t.teardown(async () => { await store.close() })
    await store.ready()
    return store
  })

  t.test('the key holds a hash, not a token, and expires by its own PX', async (t) => {
    const keyPrefix = await freshRedisPrefix(t)
    const store = createRedisTokenStore({ url, keyPrefix, denyTtlMs: 1000 })
    t.teardown(async () => { await store.close() })
    await store.ready()
    const h1 = hashOf('5')
    await store.issue(h1, { accountId: '5', username: 'u', federated: false, expiresAt: 1 }, 30_000)
    const bucket = keyLayout(keyPrefix).bucketPrefix(accountBucket('5'))
    t.equal(store.tokenKey(h1), `${bucket}t${h1.slice(2)}`, 'the digest, in the account\'s bucket')
    const pttl = await store.redis.pttl(store.tokenKey(h1))
    t.ok(pttl > 29_000 && pttl <= 30_000, `PTTL ${pttl} is the given time to live`)
    t.equal(await store.redis.type(`${bucket}a5`), 'zset', 'the account index is a sorted set, by expiry')
    t.equal(await store.redis.object('ENCODING', `${bucket}a5`), 'listpack', 'listpack-encoded while small')
    t.ok(await store.redis.pttl(`${bucket}a5`) > 29_000, 'the index lives as long as its longest token')
  })

  t.test('the layout of before 0.2.0 is gone: its keys are never read, refreshed or ended', async (t) => {
    const keyPrefix = await freshRedisPrefix(t)
    const store = createRedisTokenStore({ url, keyPrefix, denyTtlMs: 1000 })
    t.teardown(async () => { await store.close() })
    await store.ready()
    const record = { accountId: '5', username: 'u', federated: false, expiresAt: Date.now() + 60_000 }
    // A 43-character token's hash where the earlier layout kept it: the bare digest, under the prefix itself.
    const old = sha256('A'.repeat(43)).slice(0, 22)
    await store.redis.set(`${keyPrefix}t:${old}`, '9999999999999|0|5|u', 'PX', 60_000)
    await store.redis.zadd(`${keyPrefix}a:5`, Date.now() + 60_000, old)
    await store.redis.zadd(`${keyPrefix}deny`, Date.now() + 60_000, old)
    t.equal(await store.find(old), null, 'not found')
    t.equal(await store.refresh(old, record, 60_000), false, 'not refreshed')
    t.equal(await store.terminate(old), null, 'not ended: there is no such token')
    t.equal(await store.isDenied(old), false, 'not denied either')
    t.notOk((await store.listDenied()).includes(old), 'nor listed')
    t.match(await rejection(store.issue(old, record, 60_000)), { status: 503 }, 'never issued under (a caller\'s mistake)')
    const kept = hashOf('5')
    await store.issue(kept, record, 60_000)
    t.same(await store.terminateAccount('5', 1), [kept], 'a revoke-all ends the account\'s tokens, and only those')
    t.equal(await store.redis.exists(`${keyPrefix}t:${old}`, `${keyPrefix}a:5`, `${keyPrefix}deny`), 3, 'the old keys were not touched (they expire on their own)')
  })

  t.test('revoke-all is exact against a racing Login: what issued before it ends, what read the new epoch stays', async (t) => {
    const keyPrefix = await freshRedisPrefix(t)
    const store = createRedisTokenStore({ url, keyPrefix, denyTtlMs: 1000 })
    t.teardown(async () => { await store.close() })
    await store.ready()
    const rec = { accountId: '8', username: 'u', federated: false, expiresAt: Date.now() + 60_000 }
    const before = Array.from({ length: 300 }, () => hashOf('8'))
    for (const hash of before) await store.issue(hash, rec, 60_000, 0)
    // Logins racing the batched revoke-all: with the old epoch (refused) and the new one (kept).
    const racers = Array.from({ length: 20 }, () => hashOf('8'))
    const revoking = store.terminateAccount('8', 1)
    const racing = await Promise.all(Array.from({ length: 20 }, async (_, i) => ({
      hash: racers[i] ?? '', epoch: i % 2, issued: await store.issue(racers[i] ?? '', rec, 60_000, i % 2)
    })))
    const ended = await revoking
    t.same(ended.filter((hash) => before.includes(hash)).length, 300, 'every token issued before it is ended')
    for (const [i, login] of racing.entries()) {
      const found = await store.find(login.hash)
      if (login.epoch === 0) t.ok(!login.issued && found === null, `racer ${i}: a Login on the old epoch got no token`)
      else t.ok(login.issued && found !== null, `racer ${i}: a Login on the new epoch keeps its token`)
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
    const [h1, h2] = [hashOf('1'), hashOf('1')]
    await issuer.issue(h1, { accountId: '1', username: 'u', federated: false, expiresAt: 1 }, 60_000)
    await issuer.terminate(h1)
    await until(() => watcher.events.length === 1)
    t.same(watcher.events, [[h1]])

    // Cut the follower's subscription from the server side: it must report the gap, then come back.
    const clients = await issuer.redis.client('LIST') as string
    const line = clients.split('\n').find((entry) => entry.includes(`name=${keyPrefix}revoked-watcher`))
    const id = line === undefined ? undefined : /\bid=(\d+)/.exec(line)?.[1]
    t.ok(id, 'the watcher connection is named')
    await issuer.redis.client('KILL', 'ID', String(id))
    await until(() => watcher.interruptions() === 1)
    await until(watcher.isLive)
    await issuer.issue(h2, { accountId: '1', username: 'u', federated: false, expiresAt: 1 }, 60_000)
    await issuer.terminate(h2)
    await until(() => watcher.events.length === 2)
    t.same(watcher.events[1], [h2], 'delivered again after the reconnection')
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
    t.match(await rejection(store.find(hashOf('1'))), { status: 503, httpStatus: 503 })
    t.ok(Date.now() - started < 10_000, 'no hang (a bound a busy machine does not reach)')
  })
})
