import type { TokenRecord } from '@auth-token-service/protocol/layout'

/**
 * The in-process token store's records: each under its hash with a monotonic deadline, like a
 * Redis key's own expiry (wall-clock jumps do not move it), and the Login tokens of each account
 * in an index in order of issue, as the Redis store's per-account set. An expired record is
 * dropped when it is read, and a few of the oldest on each write, instead of by a timer.
 */

export interface Entry {
  record: TokenRecord
  /** Monotonic deadline. */
  deadline: number
  /** Monotonic time of its issue, refresh or last presentation (the idle timeout's). */
  seen: number
}

/** Entries each write looks at from the oldest end: amortized clean-up instead of a timer. */
const PRUNE_LOOK = 8

export class TokenTable {
  private readonly entries = new Map<string, Entry>()
  private readonly accounts = new Map<string, Set<string>>()

  private readonly now: () => number

  constructor (now: () => number) {
    this.now = now
  }

  /** The entry under this hash, expired or not (an API key ends whatever its state). */
  get (hash: string): Entry | undefined {
    return this.entries.get(hash)
  }

  /** The entry while its deadline has not passed; an expired one is forgotten as it is met. */
  live (hash: string): Entry | undefined {
    const entry = this.entries.get(hash)
    if (entry === undefined) return undefined
    if (entry.deadline <= this.now()) {
      this.forget(hash, entry)
      return undefined
    }
    return entry
  }

  /** A Login token's record, living `ttlMs` from now, listed last in its account's index; returns that index. */
  addToken (hash: string, record: TokenRecord, ttlMs: number): ReadonlySet<string> {
    this.write(hash, record, ttlMs)
    let index = this.accounts.get(record.accountId)
    if (index === undefined) this.accounts.set(record.accountId, index = new Set())
    index.add(hash)
    return index
  }

  /** An API key's record, living `ttlMs` from now: never in its account's index (api-key-records.ts). */
  addKey (hash: string, record: TokenRecord, ttlMs: number): void {
    this.write(hash, record, ttlMs)
  }

  /**
   * A Login token's record and life renewed. Re-inserted so the Map's and the index's order stay
   * roughly the order of deadlines.
   */
  renew (hash: string, record: TokenRecord, ttlMs: number): void {
    this.entries.delete(hash)
    this.entries.set(hash, { record: { ...record }, deadline: this.now() + ttlMs, seen: this.now() })
    const index = this.accounts.get(record.accountId)
    index?.delete(hash)
    index?.add(hash)
  }

  forget (hash: string, entry: Entry): void {
    this.entries.delete(hash)
    const index = this.accounts.get(entry.record.accountId)
    index?.delete(hash)
    if (index?.size === 0) this.accounts.delete(entry.record.accountId)
  }

  /** The hashes of the account's Login tokens, oldest-issued first; undefined when it has none. */
  tokensOf (accountId: string): ReadonlySet<string> | undefined {
    return this.accounts.get(accountId)
  }

  clear (): void {
    this.entries.clear()
    this.accounts.clear()
  }

  private write (hash: string, record: TokenRecord, ttlMs: number): void {
    this.pruneOldest()
    this.entries.set(hash, { record: { ...record }, deadline: this.now() + ttlMs, seen: this.now() })
  }

  private pruneOldest (): void {
    let looked = 0
    for (const hash of this.entries.keys()) {
      if (++looked > PRUNE_LOOK) break
      this.live(hash)
    }
  }
}
