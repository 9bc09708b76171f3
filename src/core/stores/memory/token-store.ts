import { performance } from 'node:perf_hooks'
import { activeAt, type TokenRecord } from '@auth-token-service/protocol/layout'
import type { RevocationFeed } from '../revocation-feed.js'
import type { RevocationWatcher } from '@auth-token-service/protocol/feed'
import type { TokenStore } from '../token-store.js'
import type { ApiKeyRecords } from '../api-key-records.js'

interface Entry {
  record: TokenRecord
  /** Monotonic deadline, like a Redis key's own expiry: wall-clock jumps do not move it. */
  deadline: number
  /** Monotonic time of its issue, refresh or last presentation (the idle timeout's). */
  seen: number
}

export interface MemoryTokenStoreOptions {
  denyTtlMs: number
  /** Active tokens one account may hold; an issue beyond it ends the account's oldest. Default 1000. */
  maxTokensPerAccount?: number
  /** Injectable monotonic clock for tests of the store itself. */
  now?: () => number
  /** Wall clock (epoch ms) that `expiresAt` is compared with on read. */
  wallNow?: () => number
  /** AUTH_IDLE_TIMEOUT_SECONDS in ms: a Login token not presented for this long is refused; absent: off. */
  idleTimeoutMs?: number | undefined
}

/**
 * The embedded default's token store: the Redis store's semantics in one process.
 * Every method is synchronous inside, so each is atomic as the Redis scripts are.
 */
export interface MemoryTokenStore extends TokenStore, ApiKeyRecords, RevocationFeed {
  readonly kind: 'in-process'
}

export function createMemoryTokenStore (options: MemoryTokenStoreOptions): MemoryTokenStore {
  const now = options.now ?? (() => performance.now())
  const wallNow = options.wallNow ?? Date.now
  const maxTokens = options.maxTokensPerAccount ?? 1000
  const idleTimeoutMs = options.idleTimeoutMs
  const tokens = new Map<string, Entry>()
  const accounts = new Map<string, Set<string>>()
  const denied = new Map<string, number>()
  /** accountId -> the epoch its last revocation recorded. Small: one number per account ever revoked. */
  const epochs = new Map<string, number>()
  const stale = (accountId: string, epoch: number | undefined): boolean =>
    epoch !== undefined && (epochs.get(accountId) ?? -Infinity) > epoch
  const watchers = new Set<RevocationWatcher>()
  const announce = (hashes: readonly string[]): void => {
    if (hashes.length === 0) return
    for (const watcher of watchers) watcher.revoked(hashes)
  }

  /** Not presented for the idle timeout (a Login token's only): refused, as on Redis. */
  const idle = (entry: Entry): boolean =>
    idleTimeoutMs !== undefined && entry.record.keyId === undefined && now() - entry.seen >= idleTimeoutMs

  const live = (tokenHash: string): Entry | undefined => {
    const entry = tokens.get(tokenHash)
    if (entry === undefined) return undefined
    if (entry.deadline <= now()) {
      forget(tokenHash, entry)
      return undefined
    }
    return entry
  }

  const forget = (tokenHash: string, entry: Entry): void => {
    tokens.delete(tokenHash)
    const index = accounts.get(entry.record.accountId)
    index?.delete(tokenHash)
    if (index?.size === 0) accounts.delete(entry.record.accountId)
  }

  const deny = (tokenHash: string): void => {
    const t = now()
    for (const [hash, until] of denied) {
      if (until > t) break
      denied.delete(hash)
    }
    denied.delete(tokenHash)
    denied.set(tokenHash, t + options.denyTtlMs)
  }

  /** Amortized clean-up instead of a timer: look at the oldest few entries on each write. */
  const pruneOldest = (): void => {
    let looked = 0
    for (const hash of tokens.keys()) {
      if (++looked > 8) break
      live(hash)
    }
  }

  return {
    kind: 'in-process',
    // Nothing to connect to.
    async ready () {},
    async issue (tokenHash, record, ttlMs, epoch) {
      if (stale(record.accountId, epoch)) return false
      pruneOldest()
      tokens.set(tokenHash, { record: { ...record }, deadline: now() + ttlMs, seen: now() })
      let index = accounts.get(record.accountId)
      if (index === undefined) accounts.set(record.accountId, index = new Set())
      index.add(tokenHash)
      // The cap: the index is in order of issue (a refresh re-inserts), so its first entries are the
      // oldest-issued, and the one just added is last: never ended while the cap is at least 1.
      const ended: string[] = []
      for (const hash of index) {
        if (index.size <= maxTokens) break
        const entry = live(hash)
        if (entry === undefined) continue
        forget(hash, entry)
        deny(hash)
        ended.push(hash)
      }
      announce(ended)
      return true
    },
    async find (tokenHash, peek = false) {
      const entry = live(tokenHash)
      if (entry === undefined) return null
      if (idle(entry)) return null
      // Off: nothing written on a find.
      if (!peek && idleTimeoutMs !== undefined) entry.seen = now()
      return activeAt({ ...entry.record }, wallNow())
    },
    async refresh (tokenHash, record, ttlMs, epoch) {
      const entry = live(tokenHash)
      // An idle token is not brought back: the Login gets a new one.
      if (entry === undefined || idle(entry) || entry.record.accountId !== record.accountId || stale(record.accountId, epoch)) return false
      // Re-insert so the Map's and the index's order stay roughly the order of deadlines.
      tokens.delete(tokenHash)
      tokens.set(tokenHash, { record: { ...record }, deadline: now() + ttlMs, seen: now() })
      const index = accounts.get(record.accountId)
      index?.delete(tokenHash)
      index?.add(tokenHash)
      return true
    },
    async terminate (tokenHash) {
      const entry = live(tokenHash)
      if (entry === undefined) return null
      forget(tokenHash, entry)
      deny(tokenHash)
      announce([tokenHash])
      return { ...entry.record }
    },
    // An API key's record: kept with the tokens, never in its account's index (api-key-records.ts).
    async seedKey (keyHash, record, ttlMs) {
      const until = denied.get(keyHash)
      if (until !== undefined && until > now()) return false
      pruneOldest()
      tokens.set(keyHash, { record: { ...record }, deadline: now() + ttlMs, seen: now() })
      return true
    },
    async endKey (keyHash) {
      const entry = tokens.get(keyHash)
      if (entry !== undefined) forget(keyHash, entry)
      deny(keyHash)
      announce([keyHash])
    },
    async endKeys (keyHashes) {
      if (keyHashes.length === 0) return
      for (const keyHash of keyHashes) {
        const entry = tokens.get(keyHash)
        if (entry !== undefined) forget(keyHash, entry)
        deny(keyHash)
      }
      announce([...keyHashes])
    },
    async terminateAccount (accountId, epoch, exceptTokenHash) {
      if (epoch !== undefined && (epochs.get(accountId) ?? -Infinity) < epoch) epochs.set(accountId, epoch)
      const index = accounts.get(accountId)
      if (index === undefined) return []
      const ended: string[] = []
      for (const hash of [...index]) {
        if (hash === exceptTokenHash) continue
        const entry = live(hash)
        if (entry === undefined) continue
        forget(hash, entry)
        deny(hash)
        ended.push(hash)
      }
      if (index.size === 0) accounts.delete(accountId)
      announce(ended)
      return ended
    },
    async isDenied (tokenHash) {
      const until = denied.get(tokenHash)
      return until !== undefined && until > now()
    },
    async listDenied () {
      const t = now()
      return [...denied].filter(([, until]) => until > t).map(([hash]) => hash)
    },
    async ping () {},
    watchRevocations (watcher) {
      // One process: nothing can be missed, so the feed is live at once and never cut.
      watchers.add(watcher)
      watcher.live()
      return () => { watchers.delete(watcher) }
    },
    async close () {
      watchers.clear()
      tokens.clear()
      accounts.clear()
      denied.clear()
      epochs.clear()
    }
  }
}
