import { setTimeout as sleep } from 'node:timers/promises'
import type { Cluster } from 'ioredis'
import t from 'tap'
import { hashToken } from '@auth-token-service/protocol/token'
import { waitFor } from '../../../support/processes.js'
import { startCluster } from '../../../support/redis.js'
import { buildTestApp } from '../../support/app.js'
import { checkCutReplica, runCutReplica } from '../../support/cut-replica.js'

/*
 * A cut-off replica on a Redis Cluster (3 masters + 3 replicas): a master's replica cut off, Logouts,
 * a revoke-all and a disable on that master answer 503; the master killed and the stale replica
 * promoted (CLUSTER FAILOVER TAKEOVER), no revocation answered Success comes back. Before the
 * fix, every Logout in the window answered Success and every one of those tokens came back.
 */

t.test('a cut-off replica promoted after its master dies: no acknowledged revocation comes back', async (t) => {
  const cluster = await startCluster(t, { replicas: 1, nodeTimeoutMs: 2000 })
  const { app, addUser, redisStore } = await buildTestApp(t, 'real', { redisCommandTimeoutMs: 500 }, { redis: cluster.topology })
  if (redisStore === undefined) throw new Error('the real app has Redis')
  const redis = redisStore.redis as Cluster
  const masterOf = async (username: string): Promise<{ master: number, replica: number | undefined }> => {
    const answer = await app.inject({ method: 'POST', url: '/auth/Login', payload: { username, password: username } })
    const token = answer.json<{ token: string }>().token
    return await cluster.nodeOf(Number(await redis.cluster('KEYSLOT', redisStore.tokenKey(hashToken(token)))))
  }
  // Accounts until four live on the first one's master.
  await addUser('user0', 'user0')
  const target = await masterOf('user0')
  const usernames = ['user0']
  for (let i = 1; usernames.length < 4 && i < 200; i++) {
    await addUser(`user${i}`, `user${i}`)
    if ((await masterOf(`user${i}`)).master === target.master) usernames.push(`user${i}`)
  }
  const server = (port: number | undefined): (typeof cluster.servers)[number] => {
    const found = cluster.servers.find((candidate) => candidate.port === port)
    if (found === undefined) throw new Error(`no node :${port}`)
    return found
  }
  const master = server(target.master)
  const replica = server(target.replica)

  const outcome = await runCutReplica(t, {
    app,
    usernames,
    async cut () {
      replica.signal('SIGSTOP')
      await master.cli('client', 'kill', 'type', 'replica')
      await waitFor('the master without its replica', async () => (await master.cli('info', 'replication')).includes('connected_slaves:0'), { timeoutMs: 10_000 })
    },
    async failover () {
      await master.kill('SIGKILL')
      replica.signal('SIGCONT')
      // Until the woken replica can answer, then its promotion without the dead master's consent.
      await sleep(200)
      await waitFor('the takeover', async () => (await replica.cli('cluster', 'failover', 'takeover').catch(() => '')) === 'OK', { timeoutMs: 10_000, everyMs: 200 })
      await waitFor('the promotion', async () => (await cluster.masters()).includes(replica.port), { timeoutMs: 30_000 })
      await cluster.settled(30_000, false)
    }
  })
  checkCutReplica(t, outcome)
})
