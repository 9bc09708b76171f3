import { Cluster, type RedisKey } from 'ioredis'
import t from 'tap'
import { startRedisCluster } from '../../support/redis.js'
import { buildGuardedApp, startTokenService, untilRefused, warm } from './support.js'

/*
 * The guard on a real 3-master Redis Cluster: direct mode with a handed-in Cluster
 * client (GET routed to the slot's master, the revocation feed on a Cluster connection
 * of its own: cluster pub/sub reaches every node), and HTTP mode against a service
 * that runs on the cluster.
 */

t.test('Redis Cluster', async (t) => {
  const topology = await startRedisCluster(t)
  const service = await startTokenService(t, {}, topology)

  t.test('direct mode: verified, cached, and a Logout evicts within 1 s', async (t) => {
    const redis = new Cluster(topology.nodes)
    t.teardown(() => { redis.disconnect() })
    let gets = 0
    const get = redis.get.bind(redis)
    redis.get = (async (key: RedisKey) => { gets++; return await get(key) }) as unknown as Cluster['get']
    const guarded = await buildGuardedApp(t, { redis, keyPrefix: service.keyPrefix, cache: { maxEntries: 100, ttlMs: 60_000 } })
    const token = await service.login()
    t.equal(await guarded.status(token), 200)
    await warm(guarded, { count: () => gets }, token)
    const started = performance.now()
    await service.logout(token)
    const delay = await untilRefused(guarded, token, started)
    t.comment(`cluster, direct: Logout to refusal of a cached token: ${delay.toFixed(1)} ms`)
    t.ok(delay < 1000)
    t.equal(redis.status, 'ready', 'the handed-in client is left open')
  })

  t.test('HTTP mode against the service on the cluster', async (t) => {
    let verifications = 0
    const counting: typeof fetch = async (input, init) => {
      if (String(input).includes('/auth/Authenticate')) verifications++
      return await fetch(input, init)
    }
    const guarded = await buildGuardedApp(t, { authenticateUrl: service.authenticateUrl, fetch: counting, cache: { maxEntries: 100, ttlMs: 60_000 } })
    const token = await service.login()
    await warm(guarded, { count: () => verifications }, token)
    const started = performance.now()
    await service.app.accounts.revokeSessions('ann')
    const delay = await untilRefused(guarded, token, started)
    t.comment(`cluster, http: sessions revoke to refusal of a cached token: ${delay.toFixed(1)} ms`)
    t.ok(delay < 1000)
  })
})
