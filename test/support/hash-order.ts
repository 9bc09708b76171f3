import type { Config } from '../../src/config/config.js'
import { createHashWorkers, type HashWorkers } from '../../src/passwords/hash-workers.js'
import { createPasswordHasher, type PasswordHasher } from '../../src/passwords/hasher.js'

/**
 * The order the hash queue starts verifies in, seen from the threads it hands them to (real
 * argon2 at the config's policy): a count of hashes, not a duration, so a loaded machine cannot
 * change it. For buildTestApp's `hasher` option.
 */
export interface HashOrder {
  /** buildTestApp's `hasher` option. */
  hasher: (config: Config) => PasswordHasher
  /** Whose verify each start was, in order (`whoOf` its password). */
  readonly starts: readonly string[]
  /** Each time a verify for `watched` came to the queue: how many verifies had started by then, and the queue's depth. */
  readonly entries: ReadonlyArray<{ at: number, depth: number }>
  /** Verifies that started after the `index`-th entry of `watched` and before its own; undefined while it has not started. */
  startedAhead: (index: number) => number | undefined
  /** While on, each started verify waits before its thread until let through (oldest first). */
  hold: (on: boolean) => void
  /** Verifies started and held. */
  held: () => number
  letOneThrough: () => void
  queueDepth: () => number
}

export function recordHashOrder (watched: string, whoOf: (password: string) => string): HashOrder {
  const starts: string[] = []
  const entries: Array<{ at: number, depth: number }> = []
  const waiting: Array<() => void> = []
  let holding = false
  let queueDepth = (): number => 0
  return {
    starts,
    entries,
    hasher (config) {
      const threads = createHashWorkers(config.hashing.concurrency)
      const recorded: HashWorkers = {
        hash: threads.hash,
        close: threads.close,
        async verify (hash, password) {
          starts.push(whoOf(password))
          if (holding) await new Promise<void>((resolve) => { waiting.push(resolve) })
          return await threads.verify(hash, password)
        }
      }
      const hasher = createPasswordHasher(config.argon2, config.hashing, recorded)
      queueDepth = hasher.queueDepth
      return {
        ...hasher,
        async verify (hash, password, caller) {
          // Before the queue sees it: the queue decides at once whether it starts or waits.
          if (caller?.account === watched) entries.push({ at: starts.length, depth: hasher.queueDepth() })
          return await hasher.verify(hash, password, caller)
        }
      }
    },
    startedAhead (index) {
      const entry = entries[index]
      if (entry === undefined) return undefined
      const own = starts.indexOf(watched, entry.at)
      return own < 0 ? undefined : own - entry.at
    },
    hold (on) {
      holding = on
      if (!on) while (waiting.length > 0) waiting.shift()?.()
    },
    held: () => waiting.length,
    letOneThrough () { waiting.shift()?.() },
    queueDepth: () => queueDepth()
  }
}
