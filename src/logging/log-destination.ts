import fs from 'node:fs'
import type { DestinationStream } from 'pino'
import type { LogBase } from './access-log.js'
import { PendingLines } from './pending-lines.js'
import { DEFAULT_LOG_BUFFER_BYTES, LOG_FLUSH_BYTES } from '../config/parts/logging.js'

/*
 * Why not sonic-boom, pino's own destination: it was put in this module's place (behind this
 * interface, with the dropped-lines line added) and measured against the stall tests.
 * - Its synchronous mode, pino's default, sleeps 100 ms on each EAGAIN and the event loop
 *   with it: a reader stopped for 2 s stalled a process logging 2,000 lines a second for
 *   1.8-1.9 s (sonic-boom 4.2 and 5.0), 28 ms with this module.
 * - Its asynchronous mode does not stall the loop. In 4.2, the version pino ships, flushSync
 *   at exit skips the write waiting for its EAGAIN retry: at SIGTERM behind a stopped reader
 *   4 of 400 access lines never arrived, and none was counted as dropped
 *   (test/integration/timing/log-pipe.test.ts). 5.0 takes over that write, and passes both log-pipe
 *   tests, but still not a write in flight on libuv's thread pool (its own flushSync says so):
 *   lines written after it go first, and it would be lost if the reader refused it (one line out of
 *   order in four trial exits behind a stopped reader). Its retry interval is fixed at 100 ms.
 * The benchmark's auth-reader-stopped scenario did not tell them apart on a machine at load
 * 23-29: p99 of the requests sent while the reader was stopped 0.67-3.57 × the runs around it
 * with this module, 0.96-4.31 × with sonic-boom's asynchronous mode.
 */

export interface BatchedDestination extends DestinationStream {
  /** Takes one whole line (pino and the access log write one per call). Never waits. */
  write (line: string): void
  /**
   * Writes what is buffered before returning, waiting for a reader that is not reading for
   * LOG_EXIT_FLUSH_MS at most (then the rest is lost). Run at exit; pino runs it after a fatal line.
   */
  flushSync (): void
  /** Lines dropped since start: the buffer was full, or stdout refused them (its reader gone). */
  droppedLines (): number
  setMaxBufferedBytes (bytes: number): void
}

/** How long a line may wait for others before it is written. */
export const LOG_FLUSH_MS = 10
// Buffered text written at once without waiting, and the default of what is held while stdout
// takes none: declared with LOG_BUFFER_BYTES, whose smallest value is one such batch.
export { DEFAULT_LOG_BUFFER_BYTES, LOG_FLUSH_BYTES }
/**
 * The longest the process waits at exit for a reader that takes nothing. A reader that reads
 * (cat, a container runtime, journald, even pino-pretty) takes the whole default buffer in far
 * less; one that took nothing for this long is stopped or stuck, and waiting more would only
 * delay the restart: with SHUTDOWN_TIMEOUT_MS (10 s) before it, the process is still gone before
 * compose's 15 s grace period (and Kubernetes' 30 s) ends in a SIGKILL that would lose it all.
 */
export const LOG_EXIT_FLUSH_MS = 2000

export interface BatchedDestinationOptions {
  /** A file descriptor; a pipe or a socket must be non-blocking (Node makes stdout's so, see batchedStdout). */
  fd?: number
  /** Bound of the buffer, in characters of the waiting lines (bytes, for the usual ASCII line). */
  maxBufferedBytes?: number
  /** pid and hostname for the line this destination writes itself (how many lines were lost). */
  base?: LogBase
}

const sleeper = new Int32Array(new SharedArrayBuffer(4))
const sleepSync = (ms: number): void => { Atomics.wait(sleeper, 0, 0, ms) }

/**
 * Log lines to a file descriptor (stdout), gathered for up to LOG_FLUSH_MS (or until
 * LOG_FLUSH_BYTES are buffered): under load the lines of hundreds of responses go out in one
 * write(2), instead of one each or one per turn of the event loop; a lone line is written
 * LOG_FLUSH_MS after it was logged.
 *
 * A write never waits for the reader. stdout in a container, under systemd or piped into
 * pino-pretty is a pipe or a socket, which Node opens non-blocking: when the reader lags, the
 * kernel takes part of a write or none of it (EAGAIN), and what it did not take stays here, to
 * be tried again on the next turn (after progress) or in LOG_FLUSH_MS (after none). So a slow or
 * stopped reader costs a failed syscall per LOG_FLUSH_MS, never a stall of the event loop
 * (why not sonic-boom, pino's own destination: at the top of this module). Files and /dev/null are
 * written as before, synchronously (a write to them waits for no other process); so is a
 * terminal, which Node keeps blocking.
 *
 * What waits is bounded (maxBufferedBytes; pending-lines.ts): a line that does not fit is
 * dropped whole and counted, and once lines fit again one line says how many were lost, where
 * they were lost.
 * Lines are never split or interleaved: the rest of a partial write goes out before anything
 * else (only another writer on the same descriptor, such as console.log, could cut in).
 *
 * What is buffered is written when the process exits, also after an uncaught error, waiting
 * at most LOG_EXIT_FLUSH_MS for a reader that takes nothing (then the rest is lost, and the
 * line the pipe took part of stays cut); only a SIGKILL or a crash of Node itself loses it. The audit trail of logins and logouts does not depend on this log (it is
 * auth_events in Postgres).
 */
export function createBatchedDestination (options: BatchedDestinationOptions = {}): BatchedDestination {
  const fd = options.fd ?? 1
  const pending = new PendingLines(LOG_FLUSH_BYTES, options.maxBufferedBytes ?? DEFAULT_LOG_BUFFER_BYTES, options.base ?? { pid: process.pid, hostname: '' })
  /** stdout took nothing at the last try: only the timer tries again, not each new line. */
  let refused = false
  let timer: NodeJS.Timeout | undefined
  let immediate: NodeJS.Immediate | undefined

  const cancelRetry = (): void => {
    if (timer !== undefined) clearTimeout(timer)
    if (immediate !== undefined) clearImmediate(immediate)
    timer = undefined
    immediate = undefined
  }

  /**
   * One try to write what waits, without waiting: 'done' (all taken), 'partial' (the kernel took
   * some and is full again, or a turn's share is written: more on the next turn), 'refused' (it
   * took nothing), 'failed'.
   */
  const writeSome = (): 'done' | 'partial' | 'refused' | 'failed' => {
    // A few batches a turn at most: a backlog goes out over a few turns, between requests.
    for (let batchesLeft = 4; ; batchesLeft--) {
      let head = pending.current()
      if (head === undefined) {
        if (batchesLeft === 0) return pending.queueEmpty() ? 'done' : 'partial'
        head = pending.startBatch()
        if (head === undefined) return 'done'
      }
      let written: number
      try {
        // fs.writeSync, looked up at each call, so that a test can count the calls.
        written = fs.writeSync(fd, head)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') return 'refused'
        pending.dropAll()
        return 'failed'
      }
      pending.taken(written)
      if (written < head.length) return written > 0 ? 'partial' : 'refused'
    }
  }

  const flush = (): void => {
    cancelRetry()
    const outcome = writeSome()
    refused = outcome === 'refused'
    if (outcome === 'partial') immediate = setImmediate(flush).unref()
    else if (outcome === 'refused') timer = setTimeout(flush, LOG_FLUSH_MS).unref()
  }

  const flushSync = (): void => {
    cancelRetry()
    pending.sayLost()
    const deadline = Date.now() + LOG_EXIT_FLUSH_MS
    for (;;) {
      const outcome = writeSome()
      if (outcome === 'done' || outcome === 'failed') return
      if (outcome === 'refused') {
        if (Date.now() >= deadline) return
        sleepSync(1)
      }
    }
  }
  process.on('exit', flushSync)

  return {
    write (line: string) {
      if (!pending.add(line)) return
      // A retry already due (stdout full, or more of a backlog next turn) writes this line too.
      if (refused || immediate !== undefined) return
      // A full batch goes at once; a lone line within LOG_FLUSH_MS. Unref'd: pending log lines
      // never keep the process alive (exit writes them).
      if (pending.hasFullBatch()) flush()
      else timer ??= setTimeout(flush, LOG_FLUSH_MS).unref()
    },
    flushSync,
    droppedLines: () => pending.dropped(),
    setMaxBufferedBytes (bytes: number) { pending.setMaxBufferedBytes(bytes) }
  }
}

let stdout: BatchedDestination | undefined

/**
 * One batched destination for the process's stdout, however many apps log to it (tests build
 * many); the bound is the last one given.
 */
export function batchedStdout (options: { maxBufferedBytes?: number, base?: LogBase } = {}): BatchedDestination {
  if (stdout === undefined) {
    // Node opens stdout non-blocking when it is a pipe or a socket (libuv's uv_pipe_open and
    // uv_tcp_open; blocking on Windows) the first time process.stdout is used: use it now, or a
    // write into a full pipe would wait in write(2) for the reader. A file or a terminal stays blocking.
    stdout = createBatchedDestination({ ...options, fd: process.stdout.fd })
  } else if (options.maxBufferedBytes !== undefined) {
    stdout.setMaxBufferedBytes(options.maxBufferedBytes)
  }
  return stdout
}
