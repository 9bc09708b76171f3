import t from 'tap'
import { waitFor } from '../../../support/processes.js'
import { startSentinelSet } from '../../../support/sentinel-set.js'
import { buildTestApp } from '../../support/app.js'
import { checkCutReplica, runCutReplica } from '../../support/cut-replica.js'

/*
 * A cut-off replica behind Sentinel (1 master + 1 replica + 3 sentinels): the replica cut off,
 * Logouts, a revoke-all and a disable answer 503; the master killed, the sentinels promote the
 * stale replica, and no revocation answered Success comes back.
 */

t.test('behind Sentinel: a cut-off replica promoted after its master dies brings no acknowledged revocation back', async (t) => {
  const set = await startSentinelSet(t)
  const { app, addUser } = await buildTestApp(t, 'real', { redisCommandTimeoutMs: 500 }, { redis: set.topology })
  const usernames = ['user0', 'user1', 'user2', 'user3']
  for (const username of usernames) await addUser(username, username)

  const outcome = await runCutReplica(t, {
    app,
    usernames,
    async cut () {
      set.replica.signal('SIGSTOP')
      await set.master.cli('client', 'kill', 'type', 'replica')
      await waitFor('the master without its replica', async () => (await set.master.cli('info', 'replication')).includes('connected_slaves:0'), { timeoutMs: 10_000 })
    },
    async failover () {
      await set.master.kill('SIGKILL')
      set.replica.signal('SIGCONT')
      await waitFor('the sentinels\' promotion', async () => await set.masterPort() === set.replica.port, { timeoutMs: 30_000, everyMs: 100 })
      await waitFor('the promoted replica a master', async () => (await set.replica.cli('role')).startsWith('master'), { timeoutMs: 30_000 })
    }
  })
  checkCutReplica(t, outcome)
})
