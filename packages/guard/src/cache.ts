import { performance } from 'node:perf_hooks'
import type { TokenRecord } from '@auth-token-service/protocol/layout'
import type { RevocationWatcher } from '@auth-token-service/protocol/feed'

export interface PositiveCacheOptions {
  maxEntries: number
  /** How long a positive answer may be reused; never past the token's own expiry. */
  ttlMs: number
  /** Monotonic clock (ms) for the cache's own deadlines. */
  now?: () => number
  /** Wall clock (epoch ms), to turn a token's `expiresAt` into a deadline. */
  wallNow?: () => number
}

/** A verification in flight; its answer is cached only if nothing revoked it meanwhile. */
export interface Lookup {
  readonly hash: string
  stale: boolean
  /** Monotonic time of `begin`: a remaining lifetime learned by this lookup counts from here. */
  readonly startedAt: number
}

interface Entry {
  record: TokenRecord
  deadline: number
}

export interface PositiveCache extends RevocationWatcher {
  /** A cached active token's record, or undefined (also whenever the feed is not live). */
  get (hash: string): TokenRecord | undefined
  /** Call before asking the store; hand the answer to `finish`, or call `abandon` on failure. */
  begin (hash: string): Lookup
  /**
   * `remainingMs`: the token's remaining life as its source measured it (the key's PTTL, or
   * `expiration_date` less the answer's `Date`), counted on this cache's monotonic clock from
   * the lookup's start, so no wall clock of the guard decides an expiry (a guard
   * whose clock ran 60 s behind served an expired token). Without it, the record's `expiresAt` against `wallNow`.
   */
  finish (lookup: Lookup, record: TokenRecord | null, remainingMs?: number): void
  abandon (lookup: Lookup): void
  readonly isLive: boolean
  readonly size: number
}

/**
 * Positive answers only, least recently used first out (Map order), keyed by token
 * hash. Trusted only while the revocation feed is live: an interrupted feed may have
 * missed revocations, so the whole cache goes and nothing is cached until the feed
 * is live again (the catch-up is a cold cache, not a replay).
 *
 * The race a cache like this must not lose: a lookup that the store answered before
 * a revocation, whose answer arrives after the revocation message (two connections,
 * no common order). Every lookup in flight is marked stale by a revocation of its
 * hash and by any interruption, and a stale answer is served once but never cached.
 */
export function createPositiveCache (options: PositiveCacheOptions): PositiveCache {
  const now = options.now ?? (() => performance.now())
  const wallNow = options.wallNow ?? Date.now
  const entries = new Map<string, Entry>()
  const inFlight = new Map<string, Set<Lookup>>()
  /** Monotonic instant until which the feed's last proof of liveness holds. */
  let liveUntil = 0
  /** The hash last put at the end of `entries` (Map order is recency order); may have left it since. */
  let newest: string | undefined
  let live = false

  const markStale = (lookups: Iterable<Lookup>): void => {
    for (const lookup of lookups) lookup.stale = true
  }

  /** The feed is live and its last proof still holds; a lapsed proof drops the cache as a cut feed does. */
  const trusted = (): boolean => {
    if (!live) return false
    if (now() < liveUntil) return true
    interrupt()
    return false
  }

  const interrupt = (): void => {
    live = false
    entries.clear()
    for (const lookups of inFlight.values()) markStale(lookups)
  }

  const release = (lookup: Lookup): void => {
    const lookups = inFlight.get(lookup.hash)
    lookups?.delete(lookup)
    if (lookups?.size === 0) inFlight.delete(lookup.hash)
  }

  return {
    get isLive () { return live && now() < liveUntil },
    get size () { return entries.size },

    get (hash) {
      if (!trusted()) return undefined
      const entry = entries.get(hash)
      if (entry === undefined) return undefined
      if (entry.deadline <= now()) {
        entries.delete(hash)
        return undefined
      }
      // Already the most recent (a hot token read again and again): nothing to reorder.
      if (hash !== newest) {
        entries.delete(hash)
        entries.set(hash, entry)
        newest = hash
      }
      return entry.record
    },

    begin (hash) {
      // Begun before the feed was live: a revocation may already have been missed.
      const startedAt = now()
      const lookup: Lookup = { hash, stale: !trusted(), startedAt }
      let lookups = inFlight.get(hash)
      if (lookups === undefined) inFlight.set(hash, lookups = new Set())
      lookups.add(lookup)
      return lookup
    },

    finish (lookup, record, remainingMs) {
      release(lookup)
      if (record === null || lookup.stale || !trusted()) return
      const t = now()
      const deadline = remainingMs === undefined
        ? Math.min(t + options.ttlMs, t + (record.expiresAt - wallNow()))
        : Math.min(t + options.ttlMs, lookup.startedAt + remainingMs)
      if (deadline <= t) return
      entries.delete(lookup.hash)
      entries.set(lookup.hash, { record, deadline })
      newest = lookup.hash
      while (entries.size > options.maxEntries) {
        const oldest = entries.keys().next()
        if (oldest.done === true) break
        entries.delete(oldest.value)
      }
    },

    abandon: release,

    revoked (hashes) {
      for (const hash of hashes) {
        entries.delete(hash)
        const lookups = inFlight.get(hash)
        if (lookups !== undefined) markStale(lookups)
      }
    },

    live (validForMs) {
      // A proof that lapsed before this one came: messages may have been missed in the gap (a
      // cluster master dead with a revocation on its way), and no `get` may have noticed it yet.
      if (live && now() >= liveUntil) interrupt()
      live = true
      liveUntil = validForMs === undefined ? Infinity : Math.max(liveUntil, now() + validForMs)
    },

    interrupted () {
      liveUntil = 0
      interrupt()
    }
  }
}
