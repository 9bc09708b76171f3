import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, readdirSync, readFileSync } from 'node:fs'
import { freePort } from '../../support/processes.js'
import { setTimeout as sleep } from 'node:timers/promises'

/** A server the bench started in a process of its own, listening on 127.0.0.1. */
export interface Child {
  readonly name: string
  readonly origin: string
  readonly port: number
  readonly pid: number
  /** SIGTERM, then SIGKILL after 5 s; resolves when the process is gone. */
  stop (): Promise<void>
}

export interface ChildSpec {
  name: string
  /** A .js file run with `node`. */
  script: string
  args?: readonly string[]
  env: Readonly<Record<string, string>>
  /** Answers 200 once the server serves. */
  readyPath: string
  /** Extra node flags (e.g. --cpu-prof). */
  nodeFlags?: readonly string[]
  /**
   * Its stdout: a file descriptor (the write end of a log pipe, lib/log-pipe.ts), handed to
   * the child and closed here, so that the child holds the only copy; /dev/null when absent.
   */
  stdoutFd?: number
  /** The port to listen on (a free one the caller picked: its URL is in the env, e.g. AUTH_OIDC_ISSUER); a free one when absent. */
  port?: number
}

const running = new Set<ChildProcess>()
// Whatever happens to the bench, its servers do not outlive it.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL')
})

/**
 * Starts the server with BENCH_PORT and PORT set to a free port and HOST=127.0.0.1.
 * Its stdout goes to `stdoutFd` (the servers that log: a pipe to a reader process) or to
 * /dev/null; the tail of its stderr is kept for the error if it dies.
 */
export async function startChild (spec: ChildSpec): Promise<Child> {
  let port: number
  let child: ChildProcess
  try {
    port = spec.port ?? await freePort()
    child = spawn(process.execPath, [...(spec.nodeFlags ?? []), spec.script, ...(spec.args ?? [])], {
      env: { ...process.env, ...spec.env, BENCH_PORT: String(port), PORT: String(port), HOST: '127.0.0.1' },
      stdio: ['ignore', spec.stdoutFd ?? 'ignore', 'pipe']
    })
  } finally {
    if (spec.stdoutFd !== undefined) closeSync(spec.stdoutFd)
  }
  const origin = `http://127.0.0.1:${port}`
  running.add(child)
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr = (stderr + chunk).slice(-4000) })
  let exited = false
  const exit = once(child, 'exit').then(() => { exited = true; running.delete(child) })

  const deadline = performance.now() + 30_000
  for (;;) {
    if (exited) throw new Error(`${spec.name} exited before serving (code ${String(child.exitCode)}):\n${stderr}`)
    if (performance.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`${spec.name} did not answer ${spec.readyPath} within 30 s:\n${stderr}`)
    }
    const ready = await fetch(origin + spec.readyPath).then((response) => response.status === 200, () => false)
    if (ready) break
    await sleep(100)
  }

  return {
    name: spec.name,
    origin,
    port,
    pid: child.pid ?? 0,
    async stop () {
      if (exited) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => { child.kill('SIGKILL') }, 5000)
      await exit
      clearTimeout(timer)
    }
  }
}

const CLOCK_TICKS_PER_SECOND = 100

/**
 * User plus system CPU seconds a process has used so far (Linux /proc; NaN elsewhere). CPU
 * time per request holds still on a busy machine where req/s and latency do not.
 */
export function cpuSeconds (pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND
  } catch {
    return Number.NaN
  }
}

/**
 * The same, by kind of thread (Linux /proc/<pid>/task; empty elsewhere): the event loop's
 * (`main`), libuv's pool (`libuv pool`: file system, DNS, and WebCrypto's signatures, which
 * oidc-provider's ID tokens are made with), V8's own (`V8 workers`: concurrent GC and the
 * optimizing compiler), and the rest (`other`: worker threads, the hash workers among them).
 */
export function cpuSecondsByThread (pid: number): Record<string, number> {
  const byKind: Record<string, number> = {}
  let tids: string[]
  try {
    tids = readdirSync(`/proc/${pid}/task`)
  } catch {
    return byKind
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      const kind = tid === String(pid) ? 'main' : name.startsWith('libuv-worker') ? 'libuv pool' : name.startsWith('V8') || name.startsWith('DelayedTask') ? 'V8 workers' : 'other'
      byKind[kind] = (byKind[kind] ?? 0) + (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND
    } catch {
      // A thread that ended between the listing and the read: its time is gone from the total too.
    }
  }
  return byKind
}
