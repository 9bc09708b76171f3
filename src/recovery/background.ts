/**
 * Work a request leaves behind, run after its answer: what must not change the answer or its time
 * (whether an account matched a reset request). Bounded: past `max` pieces waiting, new ones are
 * dropped (the per-client limit keeps a flood from getting here).
 */
export interface BackgroundWork {
  run (work: () => Promise<void>): void
  /** Resolves once everything started so far is done. */
  settled (): Promise<void>
}

export function createBackgroundWork (options: { max?: number, onError: (error: unknown) => void, onDropped?: () => void }): BackgroundWork {
  const max = options.max ?? 1000
  const running = new Set<Promise<void>>()
  return {
    run (work) {
      if (running.size >= max) {
        options.onDropped?.()
        return
      }
      // Never on this turn of the event loop: the caller's answer goes first.
      const piece: Promise<void> = new Promise<void>((resolve) => { setImmediate(resolve) })
        .then(work)
        .catch(options.onError)
        .finally(() => { running.delete(piece) })
      running.add(piece)
    },
    async settled () {
      while (running.size > 0) await Promise.allSettled([...running])
    }
  }
}
