import { UnavailableError, type StatusError } from '../errors/status.js'

export interface BoundedQueue {
  /** Runs `work` when a slot is free; refuses at once (503, Retry-After) when the queue is full. */
  run<T> (work: () => Promise<T>): Promise<T>
  /** Running plus waiting tasks. */
  depth (): number
}

export const queueFull = (): StatusError => new UnavailableError('hash-queue', undefined, { 'retry-after': '1' })

/**
 * At most `concurrency` tasks at once and `maxQueued` waiting; beyond that a
 * task is refused rather than queued without bound. Used for password hashing
 * (on the hasher's own threads, hash-workers.ts): a login flood gets a quick 503
 * with Retry-After instead of a queue, and a wait, that grow without limit.
 */
export function createBoundedQueue (concurrency: number, maxQueued: number): BoundedQueue {
  let running = 0
  const waiting: Array<() => void> = []

  const release = (): void => {
    const next = waiting.shift()
    if (next === undefined) running--
    else next()
  }

  return {
    async run (work) {
      if (running >= concurrency) {
        if (waiting.length >= maxQueued) throw queueFull()
        await new Promise<void>((resolve) => { waiting.push(resolve) })
      } else {
        running++
      }
      try {
        return await work()
      } finally {
        release()
      }
    },
    depth: () => running + waiting.length
  }
}
