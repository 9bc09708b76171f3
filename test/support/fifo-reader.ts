import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { mkdtemp, open, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'

/**
 * A real pipe (a FIFO: 64 KiB in the kernel, what Docker, containerd and a shell's `|` give a
 * process as stdout) whose only reader is a `cat` process writing into a file. The test can
 * stop the reader (SIGSTOP) as a stalled log collector stops reading. Node's own `stdio: 'pipe'`
 * is a socket pair, not a pipe, hence the FIFO.
 */
export interface FifoReader {
  /** The write end, to hand to a child as its stdout. */
  writeFd: number
  /** Closes this process's copy of the write end (once a child has its own). */
  closeWriteEnd: () => Promise<void>
  reader: ChildProcess
  /** Resolves with cat's exit code: once every writer has closed the pipe and cat has read it all. */
  readerExited: Promise<number | null>
  /** Everything the reader has received so far. */
  received: () => string
  /** A directory of this test's own, removed at its end. */
  dir: string
}

export async function fifoReader (t: Test): Promise<FifoReader> {
  const dir = await mkdtemp(join(tmpdir(), 'ats-fifo-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  const fifo = join(dir, 'stdout.fifo')
  const file = join(dir, 'stdout.log')
  execFileSync('mkfifo', [fifo])
  const out = openSync(file, 'w')
  const reader = spawn('cat', [fifo], { stdio: ['ignore', out, 'inherit'] })
  closeSync(out)
  const readerExited = new Promise<number | null>((resolve) => { reader.once('exit', (code) => { resolve(code) }) })
  t.teardown(async () => {
    if (reader.exitCode !== null || reader.signalCode !== null) return
    reader.kill('SIGCONT')
    reader.kill('SIGKILL')
    await readerExited
  })
  // Opening a FIFO for writing waits for its reader (on a thread of libuv's pool, not this loop).
  const handle = await open(fifo, 'w')
  t.teardown(async () => { await handle.close().catch(() => {}) })
  return {
    writeFd: handle.fd,
    closeWriteEnd: async () => { await handle.close() },
    reader,
    readerExited,
    received: () => readFileSync(file, 'utf8'),
    dir
  }
}
