import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, constants, openSync, readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** What a log reader received over its whole life. */
export interface LogTotals {
  bytes: number
  lines: number
}

/** The process at the far end of a server's stdout pipe (bench/servers/log-reader.ts). */
export interface LogReader {
  readonly pid: number
  /** Bytes read so far, from /proc/<pid>/io (after start-up it reads nothing but the pipe); NaN off Linux. */
  bytesRead (): number
  /** SIGSTOP: the pipe fills and the writer meets a reader that has fallen behind. */
  pause (): void
  /** SIGCONT. */
  resume (): void
  /**
   * Resolves with what it received once the pipe is closed at the other end (its server
   * exited); after `graceMs` it is killed and nothing is known.
   */
  finish (graceMs?: number): Promise<LogTotals | undefined>
}

export interface LogPipe {
  /** The write end, for the server's stdout: startChild hands it over and closes it here. */
  writeFd: number
  reader: LogReader
}

const readers = new Set<ChildProcess>()
process.once('exit', () => {
  for (const reader of readers) reader.kill('SIGKILL')
})

/**
 * A pipe whose read end belongs to a reader process of its own, as a container runtime, a
 * supervisor or `node … | cat` gives a service's stdout. A FIFO, because Node cannot make an
 * anonymous pipe for a child (its `stdio: 'pipe'` is a Unix socket pair, with other buffer
 * sizes than a pipe's 64 KiB); it is unlinked at once, so only the two processes hold it.
 * The write end is opened blocking, as pipe(2) and a shell make it (libuv also clears
 * O_NONBLOCK on a child's stdio when it spawns one).
 */
export async function openLogPipe (readerScript: string): Promise<LogPipe> {
  const dir = await mkdtemp(join(tmpdir(), 'ats-bench-log-'))
  const path = join(dir, 'stdout')
  let readFd: number | undefined
  let writeFd: number | undefined
  try {
    await run('mkfifo', ['-m', '600', path])
    // Non-blocking, or opening the read end would wait for a writer; the reader's event loop reads it either way.
    readFd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
    writeFd = openSync(path, constants.O_WRONLY)
  } catch (error) {
    if (readFd !== undefined) closeSync(readFd)
    throw error
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
  const child = spawn(process.execPath, [readerScript], { stdio: [readFd, 'ignore', 'pipe'] })
  closeSync(readFd)
  readers.add(child)
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr = (stderr + chunk).slice(-4000) })
  const exited = once(child, 'exit').then(() => { readers.delete(child) })
  const pid = child.pid
  if (pid === undefined) {
    closeSync(writeFd)
    throw new Error('the log reader did not start')
  }
  const signal = (name: NodeJS.Signals): void => { if (child.exitCode === null && child.signalCode === null) child.kill(name) }
  return {
    writeFd,
    reader: {
      pid,
      bytesRead () {
        try {
          return Number(/^rchar:\s*(\d+)/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1] ?? Number.NaN)
        } catch {
          return Number.NaN
        }
      },
      pause () { signal('SIGSTOP') },
      resume () { signal('SIGCONT') },
      async finish (graceMs = 5000) {
        signal('SIGCONT')
        const timer = setTimeout(() => { signal('SIGKILL') }, graceMs)
        await exited
        clearTimeout(timer)
        try {
          return JSON.parse(stderr.trim().split('\n').at(-1) ?? '') as LogTotals
        } catch {
          return undefined
        }
      }
    }
  }
}
