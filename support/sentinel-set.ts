import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { RedisTopology } from '../src/core/stores/redis/client.js'
import { freePort, run, startChild, tempDir, waitFor, type Scope } from './processes.js'
import { startThrowawayRedis, type ThrowawayRedis } from './redis.js'

/**
 * A Sentinel-managed Redis of the scope's own, as production runs one: a master, one replica
 * linked to it, and three sentinels (quorum 2) watching it as `mymaster`, which fail it over
 * a second after it stops answering. Used by the failover tests (test/integration/cluster/cut-replica-sentinel.test.ts).
 */

export interface SentinelSet {
  readonly topology: RedisTopology & { kind: 'sentinel' }
  readonly master: ThrowawayRedis
  readonly replica: ThrowawayRedis
  /** `redis-cli -p <first sentinel> ...args`, its stdout trimmed. */
  sentinelCli (...args: string[]): Promise<string>
  /** The port of the master the sentinels name now. */
  masterPort (): Promise<number>
}

const NAME = 'mymaster'

export async function startSentinelSet (scope: Scope): Promise<SentinelSet> {
  const master = await startThrowawayRedis(scope)
  const replica = await startThrowawayRedis(scope)
  await replica.cli('replicaof', '127.0.0.1', String(master.port))
  await waitFor('the replica\'s link', async () => (await replica.cli('info', 'replication')).includes('master_link_status:up'), { timeoutMs: 20_000, everyMs: 50 })
  const ports: number[] = []
  while (ports.length < 3) {
    const port = await freePort()
    if (port !== master.port && port !== replica.port && !ports.includes(port)) ports.push(port)
  }
  for (const port of ports) {
    const dir = await tempDir(scope, 'ats-sentinel-')
    const conf = join(dir, 'sentinel.conf')
    await writeFile(conf, [
      `port ${port}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `logfile ${join(dir, 'sentinel.log')}`,
      `sentinel monitor ${NAME} 127.0.0.1 ${master.port} 2`,
      `sentinel down-after-milliseconds ${NAME} 1000`,
      `sentinel failover-timeout ${NAME} 10000`,
      ''
    ].join('\n'))
    // redis-server in sentinel mode: the same binary as every other server here (Debian's redis-sentinel is a link to it).
    startChild(scope, 'redis-server', [conf, '--sentinel'])
  }
  const cli = async (port: number, ...args: string[]): Promise<string> =>
    (await run('redis-cli', ['-p', String(port), ...args], { timeout: 10_000 }).catch(() => ({ stdout: '' }))).stdout.trim()
  // Every sentinel knows the master, its replica and the two other sentinels: a failover can be agreed.
  await waitFor('the sentinels', async () => {
    for (const port of ports) {
      const info = await cli(port, 'sentinel', 'master', NAME)
      if (!/num-slaves\n1\b/.test(info) || !/num-other-sentinels\n2\b/.test(info)) return false
    }
    return true
  }, { timeoutMs: 30_000, everyMs: 100 })
  const first = ports[0] ?? 0
  return {
    topology: { kind: 'sentinel', name: NAME, sentinels: ports.map((port) => ({ host: '127.0.0.1', port })) },
    master,
    replica,
    sentinelCli: async (...args) => await cli(first, ...args),
    async masterPort () {
      return Number((await cli(first, 'sentinel', 'get-master-addr-by-name', NAME)).split('\n')[1])
    }
  }
}
