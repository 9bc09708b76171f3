import { type RedisClient } from '@auth-token-service/guard/shared/redis-connection'
import { serviceUnavailable } from '../errors/status.js'

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

export function createMemoryPendingStore (now: () => number = Date.now): PendingStore {
  const entries = new Map<string, { value: string, expiresAt: number }>()
  const live = (key: string): string | null => {
    const entry = entries.get(key)
    if (entry === undefined) return null
    if (entry.expiresAt <= now()) {
      entries.delete(key)
      return null
    }
    return entry.value
  }
  return {
    async put (key, value, ttlMs) {
      // Expired entries go as new ones come: the map never holds more than a TTL's worth.
      for (const [name, entry] of entries) if (entry.expiresAt <= now()) entries.delete(name)
      entries.set(key, { value, expiresAt: now() + ttlMs })
    },
    async get (key) { return live(key) },
    async take (key) {
      const value = live(key)
      entries.delete(key)
      return value
    },
    async delete (key) { entries.delete(key) }
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
