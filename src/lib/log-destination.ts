import { pino, type DestinationStream } from 'pino'

export interface BatchedDestination extends DestinationStream {
  /** Writes what is buffered now, synchronously. */
  flushSync (): void
}

/** How long a line may wait for others before it is written. */
export const LOG_FLUSH_MS = 10
/** Buffered text that is written at once, without waiting. */
export const LOG_FLUSH_BYTES = 64 * 1024

/**
 * Log lines to a file descriptor (stdout), gathered for up to LOG_FLUSH_MS (or until
 * LOG_FLUSH_BYTES are buffered): under load the lines of hundreds of responses go out in one
 * write(2), instead of one each or one per turn of the event loop. A lone line is written
 * LOG_FLUSH_MS after it was logged, so nothing waits for more traffic. Writes are synchronous,
 * as pino's own default, so a slow reader of stdout slows the service rather than growing its
 * memory. Lines still buffered are written when the process exits (also after an uncaught
 * error); only a SIGKILL or a crash of Node itself loses them, LOG_FLUSH_MS worth at most.
 * The audit trail of logins and logouts does not depend on this log (it is auth_events in
 * Postgres).
 *
 * Measured on Authenticate (bench/README.md): a write per line cost more than the rest of
 * the access log line together; a write per turn of the event loop (a turn serves a few
 * requests under load) still cost about 1.5 % of the CPU per request, written to /dev/null
 * (a pipe to a log collector costs more per write).
 */
export function createBatchedDestination (fd = 1): BatchedDestination {
  // SonicBoom handles partial writes and EAGAIN on a non-blocking pipe.
  const sink = pino.destination({ dest: fd, sync: true })
  let buffered = ''
  let timer: NodeJS.Timeout | undefined

  const flushSync = (): void => {
    if (timer !== undefined) {
      clearTimeout(timer)
      timer = undefined
    }
    if (buffered === '') return
    const out = buffered
    buffered = ''
    sink.write(out)
  }
  process.on('exit', flushSync)

  return {
    write (line: string) {
      buffered += line
      if (buffered.length >= LOG_FLUSH_BYTES) flushSync()
      // Unref'd: pending log lines never keep the process alive (exit writes them).
      else timer ??= setTimeout(flushSync, LOG_FLUSH_MS).unref()
    },
    flushSync
  }
}

let stdout: BatchedDestination | undefined

/** One batched destination for the process's stdout, however many apps log to it (tests build many). */
export function batchedStdout (): BatchedDestination {
  stdout ??= createBatchedDestination(1)
  return stdout
}
