import { type RedisClient } from '@auth-token-service/protocol/redis-connection'
import { performance } from 'node:perf_hooks'
import { serviceUnavailable } from '../errors/status.js'
import { ExpiringEntries } from '../core/stores/memory/expiring-entries.js'

/**
 * Short-lived, single-purpose records of a sign-in under way: the account whose password was
 * right while its second factor is awaited, and each WebAuthn challenge until its answer comes.
 * They live beside the tokens (Redis, or in-process with the in-process store), so any instance
 * behind a load balancer finishes what another began, and each expires by itself.
 */
export interface PendingStore {
  put (key: string, value: string, ttlMs: number): Promise<void>
  get (key: string): Promise<string | null>
  /** Read and delete in one step: a second `take` of the same key finds nothing (a challenge is answered once). */
  take (key: string): Promise<string | null>
  delete (key: string): Promise<void>
}

/** The embedded default's store: its size, and what its inserts have examined (ExpiringEntries). */
export interface MemoryPendingStore extends PendingStore {
  size (): number
  examined (): number
}

/**
 * Records one purpose may hold in-process (a purpose: the key up to its last `:`, e.g.
 * `webauthn:signin`). Each lives five minutes, so 10,000 is a sign-in begun every 30 ms for five
 * minutes, beyond what one embedded instance serves; at most a few MB. Past it the oldest record
 * of that purpose goes rather than the insert being refused: refusing would turn away every person
 * who begins a sign-in for as long as a flood lasts, while dropping the oldest costs only a person
 * who began before the last 10,000 and has not finished yet; with the per-client limit on the
 * routes that store these, a flood needs hundreds of addresses to do that within a minute. One
 * purpose's flood never pushes out another's records: the passkey options anyone may ask for
 * cannot evict a code step, whose password was already proven.
 */
export const MEMORY_PENDING_PER_PURPOSE = 10_000

/**
 * In-process, beside the in-process token store. Each purpose is one ExpiringEntries: the routes
 * give all records of a purpose one lifetime, so they expire in the order they were written and an
 * insert costs the same whatever the count (a record given another lifetime still expires on
 * time; it only leaves the front's pruning to the capacity).
 */
export function createMemoryPendingStore (now: () => number = () => performance.now(), perPurpose = MEMORY_PENDING_PER_PURPOSE): MemoryPendingStore {
  const purposes = new Map<string, ExpiringEntries<string>>()
  const purposeOf = (key: string): string => key.slice(0, Math.max(0, key.lastIndexOf(':')))
  const entriesOf = (key: string): ExpiringEntries<string> | undefined => purposes.get(purposeOf(key))
  const live = (key: string): string | null => entriesOf(key)?.get(key, now()) ?? null
  return {
    async put (key, value, ttlMs) {
      const purpose = purposeOf(key)
      let entries = purposes.get(purpose)
      if (entries === undefined) purposes.set(purpose, entries = new ExpiringEntries<string>(perPurpose))
      const t = now()
      entries.set(key, value, t + ttlMs, t)
    },
    async get (key) { return live(key) },
    async take (key) {
      const value = live(key)
      entriesOf(key)?.delete(key)
      return value
    },
    async delete (key) { entriesOf(key)?.delete(key) },
    size: () => [...purposes.values()].reduce((sum, entries) => sum + entries.size, 0),
    examined: () => [...purposes.values()].reduce((sum, entries) => sum + entries.examined, 0)
  }
}

/** Keys `<prefix>signin:<key>`; a failed command is a 503, as any other Redis failure. */
export function createRedisPendingStore (redis: RedisClient, prefix: string): PendingStore {
  const name = (key: string): string => `${prefix}signin:${key}`
  const unavailable = (error: unknown): never => { throw serviceUnavailable('redis', error) }
  return {
    async put (key, value, ttlMs) { await redis.set(name(key), value, 'PX', ttlMs).catch(unavailable) },
    async get (key) { return await redis.get(name(key)).catch(unavailable) },
    async take (key) { return await redis.getdel(name(key)).catch(unavailable) },
    async delete (key) { await redis.del(name(key)).catch(unavailable) }
  }
}
