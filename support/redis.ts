import type { ChildProcess } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import type { RedisTopology } from '../src/core/stores/redis/client.js'
import { keyLayout } from '@auth-token-service/protocol/layout'
import { freePort, reachable, run, type Scope, spawnTracked, startChild, stopChild, tailOf, tempDir, uniqueName, waitFor } from './processes.js'

/**
 * Redis for the tests and the soak run: the running one (a key prefix of each test's own), or
 * throwaway servers from the installed `redis-server` binary on free ports in temp dirs: a
 * single one (to kill, pause or fill), a 3-master Cluster, a master watched by a Sentinel.
 */

export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

/**
 * The command timeout of the stores the behaviour tests build: a Cluster command that reads every
 * master took over the service's default 500 ms at a load of 26 on two cores (the fast suite beside
 * five other jobs) and failed a contract test that is not about timeouts. What a timeout does is
 * the fault tests' subject, with the service's own setting.
 */
export const TEST_REDIS_COMMAND_TIMEOUT_MS = 5000

let redisSeen: Promise<string> | undefined

/**
 * The running Redis (TEST_REDIS_URL); when it is absent the run fails with the command that starts
 * it on that URL's port. Asked once per process: a later test's slow connect is no news of a
 * missing Redis, and the store's own commands say when it went away.
 */
export async function requireRedis (): Promise<string> {
  redisSeen ??= reachable(TEST_REDIS_URL).then((answer) => {
    if (answer === true) return TEST_REDIS_URL
    redisSeen = undefined
    const { port } = new URL(TEST_REDIS_URL)
    if (answer === 'timeout') throw new Error(`Redis at ${TEST_REDIS_URL} neither took nor refused a connect within 30 s: is the machine overloaded?`)
    throw new Error(`Redis is required at ${TEST_REDIS_URL} (${answer}): start one with \`redis-server --daemonize yes --port ${port === '' ? 6379 : port} --save "" --appendonly no\` ` +
      '(Debian: apt-get install redis-server), or set TEST_REDIS_URL; `bash .ci/run` does both')
  })
  return await redisSeen
}

/** Every key under `prefix` and its buckets' prefixes (`{tagAb}:`), by SCAN (never KEYS: the Redis is shared), sorted. */
export async function keysUnder (redis: Redis, prefix: string): Promise<string[]> {
  const found: string[] = []
  // A glob: its special characters in the prefix are only data.
  const literal = prefix.replace(/[*?[\]\\]/g, '\\$&')
  for (const pattern of [`${literal}*`, `${keyLayout(literal).bucketPrefix('??')}*`]) {
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
      found.push(...keys)
      cursor = next
    } while (cursor !== '0')
  }
  return found.sort()
}

/** Deletes every key under `prefix` at the end of the scope (never FLUSHDB: others share the Redis). */
export function deleteKeysAtEnd (scope: Scope, url: string, prefix: string): void {
  scope.teardown(async () => {
    const redis = new Redis(url)
    const keys = await keysUnder(redis, prefix)
    if (keys.length > 0) await redis.del(...keys)
    await redis.quit()
  })
}

/** A key prefix of its own for one test on the shared Redis; its keys are deleted at the end. */
export async function freshRedisPrefix (scope: Scope): Promise<string> {
  const url = await requireRedis()
  // A hash tag, like the service's default prefix: the same prefix works on a Redis Cluster.
  const prefix = `{${uniqueName('atstest')}}:`
  deleteKeysAtEnd(scope, url, prefix)
  return prefix
}

async function requireRedisServer (): Promise<void> {
  await run('redis-server', ['--version']).catch(() => {
    throw new Error('redis-server is required: apt-get install redis-server (`bash .ci/run` does it)')
  })
}

async function ping (port: number): Promise<string> {
  const { stdout } = await run('redis-cli', ['-p', String(port), 'ping'], { timeout: 10_000 }).catch(() => ({ stdout: '' }))
  return stdout.trim()
}

/** Until PING answers PONG (while an AOF loads, it answers -LOADING). */
async function untilPong (port: number, child: ChildProcess): Promise<void> {
  await waitFor(`redis-server :${port}`, async () => {
    if (child.exitCode !== null) throw new Error('exited')
    return await ping(port) === 'PONG'
  }, { timeoutMs: 20_000 })
}

export interface RedisServerOptions {
  /** AOF with fsync on every write (data survives a SIGKILL); off (default): nothing is kept. */
  aof?: boolean
  /** `maxmemory` in bytes, with `maxmemory-policy noeviction`. */
  maxmemoryBytes?: number
  /** More settings, after (so over) the ones above: `['--save', '3600 1']` persists by snapshot. */
  args?: readonly string[]
}

export interface ThrowawayRedis {
  readonly port: number
  readonly url: string
  readonly dir: string
  readonly running: boolean
  /** Sends `signal` (default SIGKILL) and resolves when the process is gone. */
  kill (signal?: NodeJS.Signals): Promise<void>
  /** Sends `signal` and returns at once (SIGSTOP, SIGCONT: a Redis that hangs, then comes back). */
  signal (signal: NodeJS.Signals): void
  /** Starts it again on the same port, with the same options and directory; resolves on PONG. */
  start (): Promise<void>
  /** `redis-cli -p <port> ...args`, its stdout trimmed. */
  cli (...args: string[]): Promise<string>
}

/** One plain redis-server of the scope's own, so it can be stopped, paused, filled or killed. */
export async function startThrowawayRedis (scope: Scope, options: RedisServerOptions = {}): Promise<ThrowawayRedis> {
  await requireRedisServer()
  const dir = await tempDir(scope, 'ats-redis-')
  const port = await freePort()
  const args = [
    '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--logfile', join(dir, 'redis.log'),
    '--save', '', '--daemonize', 'no', '--enable-debug-command', 'local',
    '--appendonly', options.aof === true ? 'yes' : 'no', '--appendfsync', 'always',
    ...(options.maxmemoryBytes === undefined ? [] : ['--maxmemory', String(options.maxmemoryBytes), '--maxmemory-policy', 'noeviction']),
    ...options.args ?? []
  ]
  let child: ChildProcess | undefined
  const redis: ThrowawayRedis = {
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    get running () { return child !== undefined && child.exitCode === null && child.signalCode === null },
    async kill (signal = 'SIGKILL') {
      if (child !== undefined) await stopChild(child, signal)
    },
    signal (signal) {
      child?.kill(signal)
    },
    async start () {
      if (redis.running) throw new Error('redis-server is already running')
      const started = spawnTracked('redis-server', args, { stdio: 'ignore' })
      child = started
      try {
        await untilPong(port, started)
      } catch (error) {
        throw new Error(`redis-server on :${port} did not start (${String(error)}):\n${await tailOf(join(dir, 'redis.log'))}`)
      }
    },
    cli: async (...cliArgs) => (await run('redis-cli', ['-p', String(port), ...cliArgs], { timeout: 10_000 })).stdout.trim()
  }
  scope.teardown(async () => {
    // A paused server would not die of SIGKILL's siblings: wake it first.
    child?.kill('SIGCONT')
    await redis.kill('SIGKILL')
  })
  await redis.start()
  return redis
}

export interface ClusterOptions {
  /** Replicas per master (default 0): with 1, six nodes, each master's replica on another node. */
  replicas?: 0 | 1
  /** cluster-node-timeout: how long a master is unreachable before its replica takes over (default 15000, Redis's). */
  nodeTimeoutMs?: number
}

/** One node of a test cluster. */
export interface ClusterNode {
  readonly port: number
  readonly running: boolean
  /** Sends `signal` (default SIGKILL) and resolves when the process is gone. */
  kill (signal?: NodeJS.Signals): Promise<void>
  /** Sends `signal` and returns at once (SIGSTOP, SIGCONT). */
  signal (signal: NodeJS.Signals): void
  /** `redis-cli -p <port> ...args`, its stdout trimmed. */
  cli (...args: string[]): Promise<string>
}

export type ClusterTopology = RedisTopology & { kind: 'cluster' }

export interface ClusterUnderTest {
  readonly topology: ClusterTopology
  readonly servers: readonly ClusterNode[]
  /** The ports of the nodes that are masters now, by CLUSTER NODES as a running node sees it. */
  masters (): Promise<number[]>
  /** Until every node that runs says cluster_state:ok and every master has its replicas connected. */
  settled (timeoutMs?: number, requireReplicas?: boolean): Promise<void>
  /** The node serving `slot` now (CLUSTER SLOTS), and its replica's port if it has one. */
  nodeOf (slot: number): Promise<{ master: number, replica: number | undefined }>
}

async function clusterNodesOf (servers: readonly ClusterNode[]): Promise<string[]> {
  for (const server of servers) {
    if (!server.running) continue
    const text = await server.cli('cluster', 'nodes').catch(() => '')
    if (text !== '') return text.split('\n')
  }
  throw new Error('no cluster node answers')
}

/**
 * Where a revocation feed of `channel` subscribes on the cluster (its connection is named
 * `<channel>-watcher`): the node's port and the client's id there (for CLIENT KILL ID).
 */
export async function feedSubscription (cluster: ClusterUnderTest, channel: string): Promise<{ port: number, id: string } | undefined> {
  for (const server of cluster.servers) {
    if (!server.running) continue
    const line = (await server.cli('client', 'list', 'type', 'pubsub')).split('\n').find((entry) => entry.includes(`${channel}-watcher`))
    const id = line === undefined ? undefined : /\bid=(\d+)/.exec(line)?.[1]
    if (id !== undefined) return { port: server.port, id }
  }
  return undefined
}

/** A Redis Cluster of the scope's own: three masters (and a replica each with `replicas: 1`), all 16384 slots assigned. */
export async function startCluster (scope: Scope, options: ClusterOptions = {}): Promise<ClusterUnderTest> {
  await requireRedisServer()
  const replicas = options.replicas ?? 0
  const dir = await tempDir(scope, 'ats-cluster-')
  const servers: ClusterNode[] = []
  for (let i = 0; i < 3 * (1 + replicas); i++) {
    let port = await freePort({ avoidBusPort: true })
    while (servers.some((server) => server.port === port || server.port + 10000 === port || server.port === port + 10000)) port = await freePort({ avoidBusPort: true })
    const child = startChild(scope, 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes',
      '--cluster-config-file', join(dir, `nodes-${port}.conf`), '--dir', dir, '--save', '', '--appendonly', 'no',
      '--dbfilename', `dump-${port}.rdb`, '--logfile', join(dir, `redis-${port}.log`),
      '--cluster-node-timeout', String(options.nodeTimeoutMs ?? 15000)])
    await untilPong(port, child)
    servers.push({
      port,
      get running () { return child.exitCode === null && child.signalCode === null },
      kill: async (signal = 'SIGKILL') => { child.kill('SIGCONT'); await stopChild(child, signal) },
      signal: (signal) => { child.kill(signal) },
      cli: async (...args) => (await run('redis-cli', ['-p', String(port), ...args], { timeout: 10_000 })).stdout.trim()
    })
  }
  await run('redis-cli', ['--cluster', 'create', ...servers.map((server) => `127.0.0.1:${server.port}`),
    '--cluster-replicas', String(replicas), '--cluster-yes'], { timeout: 60_000 })
  const cluster: ClusterUnderTest = {
    topology: { kind: 'cluster', nodes: servers.map((server) => ({ host: '127.0.0.1', port: server.port })) },
    servers,
    async masters () {
      return (await clusterNodesOf(servers))
        .map((line) => line.split(' '))
        .filter((fields) => (fields[2] ?? '').includes('master') && !(fields[2] ?? '').includes('fail') && fields.length > 8)
        .map((fields) => Number((fields[1] ?? '').split(':')[1]?.split('@')[0]))
    },
    async settled (timeoutMs = 30_000, requireReplicas = true) {
      await waitFor('the cluster', async () => {
        for (const server of servers) {
          if (!server.running) continue
          if (!(await server.cli('cluster', 'info').catch(() => '')).includes('cluster_state:ok')) return false
        }
        if (replicas === 0 || !requireReplicas) return (await cluster.masters()).length === 3
        for (const port of await cluster.masters()) {
          const server = servers.find((candidate) => candidate.port === port)
          const info = await server?.cli('info', 'replication').catch(() => '') ?? ''
          if (!/connected_slaves:[1-9]/.test(info) || /state=(?!online)/.test(info)) return false
        }
        return true
      }, { timeoutMs, everyMs: 100 })
    },
    nodeOf: async (slot) => await nodeOfSlot(servers, slot)
  }
  await cluster.settled()
  return cluster
}

async function nodeOfSlot (servers: readonly ClusterNode[], slot: number): Promise<{ master: number, replica: number | undefined }> {
  for (const line of await clusterNodesOf(servers)) {
    const fields = line.split(' ')
    if (!(fields[2] ?? '').includes('master') || (fields[2] ?? '').includes('fail')) continue
    const serves = fields.slice(8).some((range) => {
      const [from, to] = range.split('-').map(Number)
      return from !== undefined && !Number.isNaN(from) && slot >= from && slot <= (to ?? from)
    })
    if (!serves) continue
    const port = (address: string | undefined): number => Number((address ?? '').split(':')[1]?.split('@')[0])
    const replica = (await clusterNodesOf(servers)).map((other) => other.split(' '))
      .find((other) => other[3] === fields[0] && !(other[2] ?? '').includes('fail'))
    return { master: port(fields[1]), replica: replica === undefined ? undefined : port(replica[1]) }
  }
  throw new Error(`no master serves slot ${slot}`)
}

/** Three masters, no replicas, all 16384 slots assigned. */
export async function startRedisCluster (scope: Scope): Promise<ClusterTopology> {
  return (await startCluster(scope)).topology
}

/** A master and one sentinel watching it under the name `mymaster`. */
export async function startRedisSentinel (scope: Scope): Promise<RedisTopology & { kind: 'sentinel' }> {
  const master = await startThrowawayRedis(scope)
  const dir = await tempDir(scope, 'ats-sentinel-')
  let sentinelPort = await freePort()
  while (sentinelPort === master.port) sentinelPort = await freePort()
  const conf = join(dir, 'sentinel.conf')
  await writeFile(conf, [
    `port ${sentinelPort}`,
    'bind 127.0.0.1',
    `dir ${dir}`,
    `sentinel monitor mymaster 127.0.0.1 ${master.port} 1`,
    'sentinel down-after-milliseconds mymaster 1000',
    ''
  ].join('\n'))
  startChild(scope, 'redis-server', [conf, '--sentinel'])
  await waitFor('the sentinel', async () => {
    const { stdout } = await run('redis-cli', ['-p', String(sentinelPort), 'sentinel', 'get-master-addr-by-name', 'mymaster']).catch(() => ({ stdout: '' }))
    return stdout.includes(String(master.port))
  }, { timeoutMs: 20_000, everyMs: 100 })
  return { kind: 'sentinel', name: 'mymaster', sentinels: [{ host: '127.0.0.1', port: sentinelPort }] }
}
