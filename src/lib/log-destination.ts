import { pino, type DestinationStream } from 'pino'

export interface BatchedDestination extends DestinationStream {
  /** Writes what is buffered now, synchronously. */
  flushSync (): void
}

/**
 * Log lines to a file descriptor (stdout), gathered per turn of the event loop: the lines
 * logged while one turn runs (under load, the responses to many connections) go out in one
 * write(2) at the end of it, instead of one each. A lone line is written at the end of its
 * turn, so nothing waits for more traffic. Writes are synchronous, as pino's own default,
 * so a slow reader of stdout slows the service rather than growing its memory. Lines still
 * buffered are written when the process exits (also after an uncaught error); only a
 * SIGKILL or a crash of Node itself loses them, one turn's worth. The audit trail of
 * logins and logouts does not depend on this log (it is auth_events in Postgres).
 *
 * Measured on Authenticate (bench/README.md): a write per line cost more than the rest of
 * the access log line together.
 */
export function createBatchedDestination (fd = 1): BatchedDestination {
  // SonicBoom handles partial writes and EAGAIN on a non-blocking pipe.
  const sink = pino.destination({ dest: fd, sync: true })
  let buffered = ''
  let scheduled = false

  const flushSync = (): void => {
    scheduled = false
    if (buffered === '') return
    const out = buffered
    buffered = ''
    sink.write(out)
  }
  process.on('exit', flushSync)

  return {
    write (line: string) {
      buffered += line
      if (!scheduled) {
        scheduled = true
        setImmediate(flushSync)
      }
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
