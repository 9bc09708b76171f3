import { Redis } from 'ioredis'
import t from 'tap'
import { createRedisTokenStore } from '../../src/core/stores/redis/token-store.js'
import { buildTestApp } from '../support/app.js'
import { startRedisCluster, startRedisSentinel, TEST_REDIS_COMMAND_TIMEOUT_MS } from '../../support/redis.js'
import { uniqueName } from '../../support/processes.js'
import type { RedisTopology } from '../../src/core/stores/redis/client.js'
import { recordRevocations, tokenStoreContract, until } from './token-store.contract.js'

/** The token-store contract and a route smoke suite on a real Redis Cluster and a real Sentinel setup. */
for (const [name, start] of [['Redis Cluster (3 masters)', startRedisCluster], ['Redis Sentinel', startRedisSentinel]] as const) {
  t.test(name, async (t) => {
    const topology: RedisTopology = await start(t)

    t.test('token store contract', async (t) => {
      tokenStoreContract(t, async (t, { denyTtlMs, maxTokensPerAccount, idleTimeoutMs }) => {
        const store = createRedisTokenStore({ topology, keyPrefix: `{${uniqueName('c')}}:`, denyTtlMs, maxTokensPerAccount, idleTimeoutMs, commandTimeoutMs: TEST_REDIS_COMMAND_TIMEOUT_MS })
        t.teardown(async () => { await store.close() })
        await store.ready()
        return store
      })
    })

    t.test('the persistence rule reads every master: one that persists by snapshots makes the whole store lossy', async (t) => {
      const store = createRedisTokenStore({ topology, keyPrefix: `{${uniqueName('p')}}:`, denyTtlMs: 1000, commandTimeoutMs: TEST_REDIS_COMMAND_TIMEOUT_MS })
      t.teardown(async () => { await store.close() })
      await store.ready()
      t.equal((await store.persistence()).durability, 'none', 'no persistence anywhere: served')
      if (topology.kind !== 'cluster') return
      const last = topology.nodes.at(-1)
      if (last === undefined) throw new Error('a cluster has nodes')
      const node = new Redis(last.port, last.host)
      t.teardown(async () => { await node.config('SET', 'save', ''); await node.quit() })
      await node.config('SET', 'save', '3600 1')
      t.match(await store.persistence(), { durability: 'lossy', settings: 'save "3600 1", appendonly no' }, 'one master with snapshots: lossy')
    })

    t.test('the service on it: login, authenticate, refresh, revoke-all, logout, lockout, the limit before sign-in', async (t) => {
      const { app, addUser } = await buildTestApp(t, 'real', { maxFailedLogins: 3, preSignInRequestsPerIp: 2 }, { redis: topology })
      await addUser('ann', 'pw one')
      const login = async (password: string, token?: string) => await app.inject({
        method: 'POST', url: '/auth/Login', payload: { username: 'ann', password, ...(token === undefined ? {} : { token }) }
      })
      const first = await login('pw one')
      t.equal(first.statusCode, 200)
      const token = first.json<{ token: string }>().token
      t.equal((await app.inject({ url: `/auth/Authenticate/${token}` })).statusCode, 200)
      t.equal((await login('pw one', token)).json<{ token: string }>().token, token, 'refreshed, same token')
      const second = (await login('pw one')).json<{ token: string }>().token

      const watcher = recordRevocations(app.backends.tokens)
      await until(watcher.isLive)
      t.equal((await app.inject({ method: 'POST', url: `/auth/Logout/${token}` })).statusCode, 200)
      t.equal((await app.inject({ method: 'POST', url: `/auth/Logout/${token}` })).statusCode, 403, 'once')
      t.equal((await app.inject({ url: `/auth/Authenticate/${token}` })).statusCode, 403)
      await app.accounts.revokeSessions('ann')
      t.equal((await app.inject({ url: `/auth/Authenticate/${second}` })).statusCode, 403, 'revoke-all reached every token')
      await until(() => watcher.events.length === 2)
      t.same(watcher.events, [[watcher.events[0]?.[0]], [watcher.events[1]?.[0]]], 'pub/sub delivered both revocations')
      watcher.stop()

      for (let i = 0; i < 3; i++) t.equal((await login('wrong')).statusCode, 401)
      const locked = await login('pw one')
      t.equal(locked.statusCode, 429, 'the lockout script runs on this topology too')
      t.ok(Number(locked.headers['retry-after']) >= 1)

      const options = async (): Promise<number> => (await app.inject({ method: 'POST', url: '/auth/signin/passkey/options', headers: { host: 'auth.example.org' }, payload: {} })).statusCode
      t.same([await options(), await options(), await options()], [200, 200, 429], 'the limit before sign-in runs on this topology too')
    })
  })
}
