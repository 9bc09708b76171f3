import { spawn, execFile, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import type { Test } from 'tap'
import type { RedisTopology } from '../src/stores/redis/client.js'

/**
 * Throwaway Redis topologies from the installed `redis-server` binary, on free ports in
 * temp dirs, torn down at the end of the test: a 3-master Cluster and a Sentinel setup.
 */

const run = promisify(execFile)

async function freePort (avoidBusPort = false): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer()
      server.once('error', reject)
      server.listen(0, '127.0.0.1', () => {
        const address = server.address()
        server.close(() => { resolve(typeof address === 'object' && address !== null ? address.port : 0) })
      })
    })
    // A cluster node also listens on port + 10000 (its bus).
    if (!avoidBusPort || port + 10000 <= 65535) return port
  }
}

async function redisBinary (): Promise<string> {
  try {
    await run('redis-server', ['--version'])
    return 'redis-server'
  } catch {
    throw new Error('redis-server is required for the cluster and sentinel tests: apt-get install redis-server (`bash .ci/run` does it)')
  }
}

async function ping (port: number): Promise<string> {
  const { stdout } = await run('redis-cli', ['-p', String(port), 'ping']).catch(() => ({ stdout: '' }))
  return stdout.trim()
}

async function waitFor (what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!await check()) {
    if (Date.now() > deadline) throw new Error(`${what} not ready within ${timeoutMs} ms`)
    await sleep(100)
  }
}

function startServer (t: Test, binary: string, args: string[]): ChildProcess {
  const child = spawn(binary, args, { stdio: 'ignore' })
  t.teardown(async () => {
    if (child.exitCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGKILL')
    await exited
  })
  return child
}

async function tempDir (t: Test, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  return dir
}

/** One plain redis-server of the test's own (so it can be stopped, paused or killed). */
export async function startRedisServer (t: Test): Promise<{ url: string, process: ChildProcess }> {
  const binary = await redisBinary()
  const dir = await tempDir(t, 'ats-redis-')
  const port = await freePort()
  const child = startServer(t, binary, ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'])
  await waitFor(`redis-server :${port}`, async () => await ping(port) === 'PONG')
  return { url: `redis://127.0.0.1:${port}`, process: child }
}

/** Three masters, no replicas, all 16384 slots assigned. */
export async function startRedisCluster (t: Test): Promise<RedisTopology & { kind: 'cluster' }> {
  const binary = await redisBinary()
  const dir = await tempDir(t, 'ats-cluster-')
  const ports: number[] = []
  for (let i = 0; i < 3; i++) {
    let port = await freePort(true)
    while (ports.includes(port)) port = await freePort(true)
    ports.push(port)
    startServer(t, binary, ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes',
      '--cluster-config-file', join(dir, `nodes-${port}.conf`), '--dir', dir, '--save', '', '--appendonly', 'no',
      '--dbfilename', `dump-${port}.rdb`])
  }
  for (const port of ports) await waitFor(`redis-server :${port}`, async () => await ping(port) === 'PONG')
  await run('redis-cli', ['--cluster', 'create', ...ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', '0', '--cluster-yes'])
  await waitFor('the cluster', async () => {
    for (const port of ports) {
      const { stdout } = await run('redis-cli', ['-p', String(port), 'cluster', 'info'])
      if (!stdout.includes('cluster_state:ok')) return false
    }
    return true
  })
  return { kind: 'cluster', nodes: ports.map((port) => ({ host: '127.0.0.1', port })) }
}

/** A master and one sentinel watching it under the name `mymaster`. */
export async function startRedisSentinel (t: Test): Promise<RedisTopology & { kind: 'sentinel' }> {
  const binary = await redisBinary()
  const dir = await tempDir(t, 'ats-sentinel-')
  const masterPort = await freePort()
  let sentinelPort = await freePort()
  while (sentinelPort === masterPort) sentinelPort = await freePort()
  startServer(t, binary, ['--port', String(masterPort), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'])
  await waitFor(`redis-server :${masterPort}`, async () => await ping(masterPort) === 'PONG')
  const conf = join(dir, 'sentinel.conf')
  await writeFile(conf, [
    `port ${sentinelPort}`,
    'bind 127.0.0.1',
    `dir ${dir}`,
    `sentinel monitor mymaster 127.0.0.1 ${masterPort} 1`,
    'sentinel down-after-milliseconds mymaster 1000',
    ''
  ].join('\n'))
  startServer(t, binary, [conf, '--sentinel'])
  await waitFor('the sentinel', async () => {
    const { stdout } = await run('redis-cli', ['-p', String(sentinelPort), 'sentinel', 'get-master-addr-by-name', 'mymaster']).catch(() => ({ stdout: '' }))
    return stdout.includes(String(masterPort))
  })
  return { kind: 'sentinel', name: 'mymaster', sentinels: [{ host: '127.0.0.1', port: sentinelPort }] }
}
