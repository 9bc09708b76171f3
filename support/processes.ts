import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, rmSync } from 'node:fs'
import { chown, mkdtemp, readFile, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import pg from 'pg'

/**
 * Throwaway servers for fault-injection tests and the soak run: a `redis-server`, a
 * `postgres` (initdb into a temp dir) and the built service (`node dist/cli/main.js
 * serve`), each on a free loopback port, each killed and its directory removed when
 * the scope ends. If the process dies without running its teardowns (a signal, a
 * crash), an exit hook still kills what it started and removes what it created.
 */

const run = promisify(execFile)

/** The built CLI to run: this checkout's dist/, or ATS_SERVICE_CLI (another build of the same package). */
export const CLI = process.env.ATS_SERVICE_CLI ?? fileURLToPath(new URL('../dist/cli/main.js', import.meta.url))

/** What owns the servers: a tap Test, or anything with the same teardown. */
export interface Scope {
  teardown (fn: () => unknown): void
}

// ---------------------------------------------------------------- last-resort cleanup

/** Processes still running, with the signal that ends each at once and cleanly enough. */
const livePids = new Map<number, NodeJS.Signals>()
const liveDirs = new Set<string>()
let exitHookInstalled = false

function sweep (): void {
  for (const [pid, signal] of livePids) {
    try { process.kill(pid, signal) } catch {}
  }
  livePids.clear()
  for (const dir of liveDirs) {
    try { rmSync(dir, { recursive: true, force: true }) } catch {}
  }
  liveDirs.clear()
}

function installExitHook (): void {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.once('exit', sweep)
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.once(signal, () => {
      sweep()
      // Raise it again now that this listener is gone: whoever else listens (tap's signal-exit
      // waits until it is the last listener) handles it, and with nobody left the process dies of it.
      process.kill(process.pid, signal)
    })
  }
}

function track (child: ChildProcess, emergencySignal: NodeJS.Signals): void {
  installExitHook()
  const pid = child.pid
  if (pid === undefined) return
  livePids.set(pid, emergencySignal)
  child.once('exit', () => { livePids.delete(pid) })
}

async function stopChild (child: ChildProcess, signal: NodeJS.Signals, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => { resolve() }))
  child.kill(signal)
  const timer = setTimeout(() => { child.kill('SIGKILL') }, graceMs)
  await exited
  clearTimeout(timer)
}

// ---------------------------------------------------------------- small tools

export async function freePort (): Promise<number> {
  return await new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => { resolve(typeof address === 'object' && address !== null ? address.port : 0) })
    })
  })
}

export async function waitFor (what: string, check: () => Promise<boolean>, timeoutMs = 30_000, everyMs = 50): Promise<number> {
  const started = Date.now()
  while (!await check().catch(() => false)) {
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await sleep(everyMs)
  }
  return Date.now() - started
}

/** A temp dir removed at the end of the scope (and by the exit hook); chowned to `owner` when given. */
export async function tempDir (scope: Scope, prefix: string, owner?: { uid: number, gid: number }): Promise<string> {
  installExitHook()
  const dir = await mkdtemp(join(tmpdir(), prefix))
  liveDirs.add(dir)
  if (owner !== undefined) await chown(dir, owner.uid, owner.gid)
  scope.teardown(async () => {
    await rm(dir, { recursive: true, force: true })
    liveDirs.delete(dir)
  })
  return dir
}

async function tailOf (file: string, lines = 30): Promise<string> {
  const text = await readFile(file, 'utf8').catch(() => '')
  return text.split('\n').slice(-lines).join('\n')
}

// ---------------------------------------------------------------- Redis

export interface RedisServerOptions {
  /** AOF with fsync on every write (data survives a SIGKILL); off: nothing is kept. */
  aof: boolean
  /** `maxmemory` in bytes, with `maxmemory-policy noeviction`. */
  maxmemoryBytes?: number
}

export interface ThrowawayRedis {
  readonly port: number
  readonly url: string
  readonly dir: string
  readonly running: boolean
  /** Sends `signal` (default SIGKILL) and resolves when the process is gone. */
  kill (signal?: NodeJS.Signals): Promise<void>
  /** Starts it again on the same port, with the same options and directory; resolves on PONG. */
  start (): Promise<void>
  /** `redis-cli -p <port> ...args`, its stdout trimmed. */
  cli (...args: string[]): Promise<string>
}

export async function startThrowawayRedis (scope: Scope, options: RedisServerOptions): Promise<ThrowawayRedis> {
  await run('redis-server', ['--version']).catch(() => {
    throw new Error('redis-server is required: apt-get install redis-server (`bash .ci/run` does it)')
  })
  const dir = await tempDir(scope, 'ats-fault-redis-')
  const port = await freePort()
  const args = [
    '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--logfile', join(dir, 'redis.log'),
    '--save', '', '--daemonize', 'no', '--enable-debug-command', 'local',
    '--appendonly', options.aof ? 'yes' : 'no', '--appendfsync', 'always',
    ...(options.maxmemoryBytes === undefined ? [] : ['--maxmemory', String(options.maxmemoryBytes), '--maxmemory-policy', 'noeviction'])
  ]
  let child: ChildProcess | undefined
  const cli = async (...cliArgs: string[]): Promise<string> =>
    (await run('redis-cli', ['-p', String(port), ...cliArgs], { timeout: 10_000 })).stdout.trim()

  const redis: ThrowawayRedis = {
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    get running () { return child !== undefined && child.exitCode === null && child.signalCode === null },
    async kill (signal = 'SIGKILL') {
      if (child !== undefined) await stopChild(child, signal)
    },
    async start () {
      if (redis.running) throw new Error('redis-server is already running')
      const started = spawn('redis-server', args, { stdio: 'ignore' })
      track(started, 'SIGKILL')
      child = started
      try {
        // While an AOF loads, PING answers -LOADING: wait for a real PONG.
        await waitFor(`redis-server :${port}`, async () => {
          if (started.exitCode !== null) throw new Error('exited')
          return await cli('ping') === 'PONG'
        }, 20_000)
      } catch (error) {
        throw new Error(`redis-server on :${port} did not start (${String(error)}):\n${await tailOf(join(dir, 'redis.log'))}`)
      }
    },
    cli
  }
  scope.teardown(async () => { await redis.kill('SIGKILL') })
  await redis.start()
  return redis
}

// ---------------------------------------------------------------- Postgres

export interface ThrowawayPostgres {
  readonly port: number
  /** The service's database (`ats`), migrated by `migrate()`. */
  readonly url: string
  readonly running: boolean
  /** 'fast': SIGINT (pg_ctl stop -m fast); 'kill': SIGKILL of the postmaster. Resolves when it is gone. */
  stop (mode: 'fast' | 'kill'): Promise<void>
  /** Starts it again on the same port and data directory; resolves when it accepts connections. */
  start (): Promise<void>
}

/** Postgres refuses to run as root: run it as the `postgres` user when we are root. */
async function postgresOwner (): Promise<{ uid: number, gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined
  const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim())
  const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim())
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) throw new Error('running as root and no `postgres` user to run Postgres as')
  return { uid, gid }
}

async function canConnect (url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 })
  client.on('error', () => {})
  try {
    await client.connect()
    await client.query('SELECT 1')
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

export async function startThrowawayPostgres (scope: Scope): Promise<ThrowawayPostgres> {
  await run('initdb', ['--version']).catch(() => {
    throw new Error('initdb and postgres are required on PATH (Debian: apt-get install postgresql; /usr/lib/postgresql/<v>/bin)')
  })
  const owner = await postgresOwner()
  const dir = await tempDir(scope, 'ats-fault-pg-', owner)
  const data = join(dir, 'data')
  const asOwner = owner === undefined ? {} : { uid: owner.uid, gid: owner.gid }
  await run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions'],
    { ...asOwner, cwd: dir, timeout: 60_000 })
  const port = await freePort()
  const adminUrl = `postgres://postgres@127.0.0.1:${port}/postgres`
  const url = `postgres://postgres@127.0.0.1:${port}/ats`
  const args = ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1',
    '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=50']
  let child: ChildProcess | undefined
  let log = ''

  const server: ThrowawayPostgres = {
    port,
    url,
    get running () { return child !== undefined && child.exitCode === null && child.signalCode === null },
    async stop (mode) {
      if (child !== undefined) await stopChild(child, mode === 'fast' ? 'SIGINT' : 'SIGKILL', 20_000)
    },
    async start () {
      if (server.running) throw new Error('postgres is already running')
      log = ''
      const started = spawn('postgres', args, { ...asOwner, cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] })
      started.stderr?.on('data', (chunk: Buffer) => { log = (log + chunk.toString()).slice(-20_000) })
      // SIGQUIT: immediate shutdown, the postmaster takes its backends with it.
      track(started, 'SIGQUIT')
      child = started
      try {
        await waitFor(`postgres :${port}`, async () => {
          if (started.exitCode !== null) throw new Error('exited')
          return await canConnect(adminUrl)
        }, 30_000, 100)
      } catch (error) {
        throw new Error(`postgres on :${port} did not start (${String(error)}):\n${log}`)
      }
    }
  }
  scope.teardown(async () => {
    if (child !== undefined) await stopChild(child, 'SIGQUIT')
  })
  await server.start()
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query('CREATE DATABASE ats')
  await admin.end()
  await runCli(['migrate'], { DATABASE_URL: url })
  return server
}

// ---------------------------------------------------------------- the service

function requireBuild (): void {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` (npm test does it first)`)
}

/** Runs one command of the built CLI; rejects with its stderr when it fails. */
export async function runCli (args: string[], env: Record<string, string>, input?: string): Promise<string> {
  requireBuild()
  return await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH, ...env },
      stdio: ['pipe', 'pipe', 'pipe']
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
    const timer = setTimeout(() => { child.kill('SIGKILL') }, 60_000)
    child.once('exit', (code) => {
      clearTimeout(timer)
      if (code === 0) resolve(stdout)
      else reject(new Error(`auth-token-service ${args.join(' ')} exited with ${String(code)}: ${stderr}`))
    })
    child.stdin.end(input ?? '')
  })
}

export interface ServiceProcess {
  readonly port: number
  readonly baseUrl: string
  readonly pid: number
  /** Everything it wrote to stdout and stderr so far. */
  output (): string
  /** Null while it runs. */
  exitStatus (): { code: number | null, signal: NodeJS.Signals | null } | null
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
  /** Sends `signal` and resolves with how it ended (SIGKILL after `graceMs`). */
  stop (signal?: NodeJS.Signals, graceMs?: number): Promise<{ code: number | null, signal: NodeJS.Signals | null }>
}

export interface ServiceStartOptions {
  /** Listen here (a restart on the same port); default a free one. */
  port?: number
  /** Wait until /health/ready answers 200 (default), or only until /health/live does. */
  waitReady?: boolean
}

/**
 * Starts `node dist/cli/main.js serve` with exactly `env` (plus PATH, HOST and PORT) and
 * resolves once it answers. LOG_LEVEL=warn hides Fastify's "listening" line, so
 * readiness is polled over HTTP instead.
 */
export async function startService (scope: Scope, env: Record<string, string>, options: ServiceStartOptions = {}): Promise<ServiceProcess> {
  requireBuild()
  const port = options.port ?? await freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  const child = spawn(process.execPath, [CLI, 'serve'], {
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  track(child, 'SIGKILL')
  let output = ''
  // The last 2 MB, cut at a line boundary (every 503 is logged with its cause).
  const keep = (chunk: Buffer): void => {
    output += chunk.toString()
    if (output.length > 2_000_000) output = output.slice(output.indexOf('\n', output.length - 1_500_000) + 1)
  }
  child.stdout.on('data', keep)
  child.stderr.on('data', keep)
  let status: { code: number | null, signal: NodeJS.Signals | null } | null = null
  const exited = new Promise<{ code: number | null, signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      status = { code, signal }
      resolve(status)
    })
  })
  scope.teardown(async () => { await stopChild(child, 'SIGKILL') })
  const path = options.waitReady === false ? '/health/live' : '/health/ready'
  try {
    await waitFor(`the service on :${port}`, async () => {
      if (status !== null) throw new Error('exited')
      const response = await fetch(baseUrl + path, { signal: AbortSignal.timeout(2000) })
      await response.arrayBuffer()
      return response.status === 200
    }, 60_000, 50)
  } catch (error) {
    await stopChild(child, 'SIGKILL')
    throw new Error(`the service did not come up on :${port} (${String(error)}):\n${output}`)
  }
  return {
    port,
    baseUrl,
    pid: child.pid ?? -1,
    output: () => output,
    exitStatus: () => status,
    exited,
    async stop (signal = 'SIGTERM', graceMs = 30_000) {
      await stopChild(child, signal, graceMs)
      return await exited
    }
  }
}

/** The environment every fault test gives the service: fail fast, quiet logs, one bootstrap account. */
export function serviceEnv (backends: { redisUrl: string, databaseUrl: string }, account: { username: string, password: string }, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: backends.databaseUrl,
    REDIS_URL: backends.redisUrl,
    LOG_LEVEL: 'warn',
    AUTH_BOOTSTRAP_USERNAME: account.username,
    AUTH_BOOTSTRAP_PASSWORD: account.password,
    AUTH_REDIS_COMMAND_TIMEOUT_MS: '300',
    ...extra
  }
}
