import { setTimeout as sleep } from 'node:timers/promises'
import { Cluster } from 'ioredis'
import t from 'tap'
import { buildTestApp } from '../support/app.js'
import { buildGuardedApp } from '../guard/support.js'
import { waitFor } from '../../support/processes.js'
import { startCluster } from '../../support/redis.js'
import { authenticate, login, logout, longestUnavailableMs, newLoadState, startLoad, throughGuard, type LoadUser } from '../support/cluster-load.js'

/*
 * Issue 23: a revocation acknowledged to the client survives its master's failover. The
 * service and a warm direct-mode guard run on a 3-master + 3-replica cluster under a load of
 * Logins, Authenticates and Logouts; a master is killed (SIGKILL) and its replica promoted.
 * Before that: a Logout whose master's replica does not acknowledge it in time answers 503.
 */

t.test('failover of a master under load: no logged-out token comes back', async (t) => {
  const cluster = await startCluster(t, { replicas: 1, nodeTimeoutMs: 2000 })
  const { app, addUser, redisStore, redisPrefix } = await buildTestApp(t, 'real', {}, { redis: cluster.topology })
  if (redisStore === undefined || redisPrefix === undefined) throw new Error('the real app has Redis')
  const users: LoadUser[] = Array.from({ length: 12 }, (_, i) => ({ username: `user${i}`, password: `pw number ${i}` }))
  for (const user of users) await addUser(user.username, user.password)
  const guardRedis = new Cluster(cluster.topology.nodes)
  t.teardown(() => { guardRedis.disconnect() })
  const guard = await buildGuardedApp(t, { redis: guardRedis, keyPrefix: redisPrefix, cache: { maxEntries: 10_000, ttlMs: 60_000 } })
  const redis = redisStore.redis as Cluster
  const state = newLoadState()
  for (const user of users) for (let i = 0; i < 3; i++) await login(app, user, state)

  t.test('a Logout no replica acknowledges in time answers 503', async (t) => {
    const token = [...state.active][0] ?? ''
    const slot = Number(await redis.cluster('KEYSLOT', redisStore.tokenKey((await import('../../src/tokens/token.js')).hashToken(token))))
    const { replica } = await cluster.nodeOf(slot)
    const node = cluster.servers.find((server) => server.port === replica)
    if (node === undefined) throw new Error('the master has a replica')
    state.active.delete(token)
    node.signal('SIGSTOP')
    const answer = await app.inject({ method: 'POST', url: `/auth/Logout/${token}` })
    node.signal('SIGCONT')
    t.equal(answer.statusCode, 503, 'not acknowledged: a failover could lose it')
    await cluster.settled()
  })

  t.test('kill a master under load', async (t) => {
    // Warm the guard's cache for every active token.
    for (const token of state.active) await throughGuard(guard, token, state, 'warming')
    const load = startLoad(app, guard, users, state, 4)
    await sleep(3000)
    // The master of the most recent acknowledged Logout: its replica must not bring it back.
    const recent = [...state.ended.entries()].sort((a, b) => b[1] - a[1])[0]?.[0]
    if (recent === undefined) throw new Error('no Logout yet')
    const { hashToken } = await import('../../src/tokens/token.js')
    const { master } = await cluster.nodeOf(Number(await redis.cluster('KEYSLOT', redisStore.tokenKey(hashToken(recent)))))
    const waits = await Promise.all((await cluster.masters()).map(async (port) =>
      Number(/cmdstat_wait:calls=(\d+)/.exec(await cluster.servers.find((server) => server.port === port)?.cli('info', 'commandstats') ?? '')?.[1] ?? 0)))
    const endedBeforeKill = new Map(state.ended)
    const killedAt = performance.now()
    await cluster.servers.find((server) => server.port === master)?.kill('SIGKILL')
    // Its replica promoted: three masters again, the killed one not among them.
    await waitFor('the failover', async () => {
      const masters = await cluster.masters()
      return masters.length === 3 && !masters.includes(master)
    }, { timeoutMs: 30_000, everyMs: 50 })
    await cluster.settled(30_000, false)
    const failoverMs = performance.now() - killedAt
    await sleep(3000)
    await load.stop()
    t.ok(waits.reduce((sum, calls) => sum + calls, 0) > 0, `the masters ran WAIT after revocations (${waits.join(' / ')} calls)`)
    t.ok(endedBeforeKill.size > 0, `${endedBeforeKill.size} tokens logged out before the kill`)

    // After the failover: none of them authenticates, on the service or through the warm guard.
    let refused = 0
    for (const token of endedBeforeKill.keys()) {
      const status = await authenticate(app, token, state, 'after the failover')
      const guarded = await throughGuard(guard, token, state, 'after the failover', 0)
      if (status === 403 && guarded === 403) refused++
    }
    t.equal(refused, endedBeforeKill.size, 'every token logged out before the kill is refused by the service and the guard')
    // And every token still active works again.
    let working = 0
    for (const token of state.active) if (await authenticate(app, token, state, 'after the failover') === 200) working++
    t.equal(working, state.active.size, 'every active token authenticates after the failover')
    t.same(state.violations, [], 'no wrong answer under load, across the failover')
    const outage = longestUnavailableMs(state.unavailable)
    t.comment(`failover: master :${master} killed; replica promoted after ${failoverMs.toFixed(0)} ms; ${endedBeforeKill.size} tokens logged out before, ${state.ended.size} in all; ` +
      `${state.counts.logins} Logins, ${state.counts.authenticates} Authenticates, ${state.counts.logouts} Logouts, ${state.counts.guard} guard requests; ` +
      `${state.unavailable.length} answers 503, the longest stretch ${outage.toFixed(0)} ms`)
    t.ok(outage < failoverMs + 5000, '503s only around the failover')
  })
})
