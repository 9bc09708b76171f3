import { execFile, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { chown, mkdtemp, readFile, rm } from 'node:fs/promises'
import { createServer, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'

/**
 * Processes and places for throwaway servers, shared by the tests and the soak run: free
 * ports, temp dirs, waiting until something holds, starting and stopping children. Whatever
 * is started or created here is killed or removed when its scope ends; if the process dies
 * without running its teardowns (a signal, a crash), an exit hook still does it.
 */

export const run = promisify(execFile)

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

/** `spawn`, and the exit hook kills the child with `emergencySignal` if this process dies first. */
export function spawnTracked (command: string, args: readonly string[], options: SpawnOptions, emergencySignal: NodeJS.Signals = 'SIGKILL'): ChildProcess {
  installExitHook()
  const child = spawn(command, args, options)
  const pid = child.pid
  if (pid === undefined) return child
  livePids.set(pid, emergencySignal)
  child.once('exit', () => { livePids.delete(pid) })
  return child
}

/** Sends `signal` and resolves when the child is gone (SIGKILL after `graceMs`). */
export async function stopChild (child: ChildProcess, signal: NodeJS.Signals, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => { resolve() }))
  child.kill(signal)
  const timer = setTimeout(() => { child.kill('SIGKILL') }, graceMs)
  await exited
  clearTimeout(timer)
}

/** A child of the scope, killed when the scope ends (or by the exit hook if this process dies first). */
export function startChild (scope: Scope, command: string, args: readonly string[], options: SpawnOptions = {}): ChildProcess {
  const child = spawnTracked(command, args, { stdio: 'ignore', ...options })
  scope.teardown(async () => { await stopChild(child, 'SIGKILL') })
  return child
}

// ---------------------------------------------------------------- small tools

/**
 * A TCP port nothing listens on right now (listened on, then released). `avoidBusPort`: one
 * whose port + 10000 exists too (a Redis Cluster node listens there, on its bus).
 */
/** Every port freePort gave this process: the kernel can hand a just-closed port out again at once (CI saw PORT and INTERNAL_PORT equal). */
const givenPorts = new Set<number>()

export async function freePort (options: { avoidBusPort?: boolean } = {}): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer()
      server.once('error', reject)
      server.listen(0, '127.0.0.1', () => {
        const address = server.address()
        server.close(() => { resolve(typeof address === 'object' && address !== null ? address.port : 0) })
      })
    })
    if (givenPorts.has(port)) continue
    if (options.avoidBusPort !== true || port + 10000 <= 65535) {
      givenPorts.add(port)
      return port
    }
  }
}

/**
 * Polls `check` until it holds; returns the milliseconds that took. A check that throws fails
 * the wait at once (a server that exited will not come up): one that means "not yet" returns false.
 */
export async function waitFor (what: string, check: () => boolean | Promise<boolean>, options: { timeoutMs?: number, everyMs?: number } = {}): Promise<number> {
  const { timeoutMs = 30_000, everyMs = 50 } = options
  const started = Date.now()
  while (!await check()) {
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

/** The last lines of a log file, for the error of a server that did not start. */
export async function tailOf (file: string, lines = 30): Promise<string> {
  const text = await readFile(file, 'utf8').catch(() => '')
  return text.split('\n').slice(-lines).join('\n')
}

/** `prefix_` and 12 random hex digits: a name no other run uses. */
export function uniqueName (prefix: string): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`
}

/**
 * Whether something accepts TCP connections at the URL's host and port: `true`, or why not. A
 * server that is not there refuses at once (loopback): only that, or another socket error, says
 * "absent". A connect is waited for up to 30 s: a test process on a loaded machine can take
 * longer than a second to see the answer, and reporting a running server as missing sent people
 * to start one that was already up. Why not: a socket error's code (`ECONNREFUSED`: nothing
 * listens there), or `timeout` when `patienceMs` passed without an answer.
 */
export async function reachable (url: string, patienceMs = 30_000): Promise<true | string> {
  const { hostname, port, protocol } = new URL(url)
  return await new Promise((resolve) => {
    const socket = new Socket()
    socket.setTimeout(patienceMs)
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('timeout', () => { socket.destroy(); resolve('timeout') })
    socket.once('error', (error: NodeJS.ErrnoException) => { resolve(error.code ?? error.message) })
    socket.connect(port === '' ? DEFAULT_PORTS[protocol] ?? 0 : Number(port), hostname)
  })
}

/** The port a URL without one means. */
const DEFAULT_PORTS: Partial<Record<string, number>> = { 'redis:': 6379, 'rediss:': 6379, 'postgres:': 5432, 'postgresql:': 5432 }
