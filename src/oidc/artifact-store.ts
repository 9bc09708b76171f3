import { createHash } from 'node:crypto'
import type { RedisClient } from '@auth-token-service/protocol/redis-connection'

/**
 * Where the provider's short-lived artifacts live (authorization codes, refresh tokens, device
 * codes, grants, its sessions and interactions): expiring keys in Redis (a Cluster too: each
 * command names one key), or a map in the embedded default. Keys are named by the SHA-256 of the
 * artifact's id, never the id: a code, a refresh token or a session's cookie value is a secret, and
 * a dump of Redis must hand out none (the payloads are stored without their `jti` for the same reason).
 */
export interface ArtifactStore {
  get (key: string): Promise<string | null>
  /** `ttlMs` undefined: no expiry (nothing of the provider's is stored so: every model has a lifetime). */
  set (key: string, value: string, ttlMs: number | undefined): Promise<void>
  /** Replaces a value keeping its expiry; false when there is none. */
  replace (key: string, value: string): Promise<boolean>
  del (keys: readonly string[]): Promise<void>
  /** Adds to a set whose expiry is raised to at least `ttlMs` (an index never outlives nothing, nor dies before a member). */
  addMember (key: string, member: string, ttlMs: number): Promise<void>
  members (key: string): Promise<string[]>
  /** The set's members, and the set gone, in one step: of two callers at once, one gets them (the other none). */
  takeMembers (key: string): Promise<string[]>
  removeMember (key: string, member: string): Promise<void>
}

/** An id as a key names it: base64url SHA-256. */
export function idDigest (id: string): string {
  return createHash('sha256').update(id).digest('base64url')
}

export function createRedisArtifactStore (redis: RedisClient): ArtifactStore {
  return {
    get: async (key) => await redis.get(key),
    async set (key, value, ttlMs) {
      if (ttlMs === undefined) await redis.set(key, value)
      else await redis.set(key, value, 'PX', Math.max(1, Math.ceil(ttlMs)))
    },
    replace: async (key, value) => await redis.set(key, value, 'KEEPTTL', 'XX') === 'OK',
    async del (keys) {
      // One command a key: a Cluster spreads them over slots.
      await Promise.all(keys.map(async (key) => await redis.del(key)))
    },
    async addMember (key, member, ttlMs) {
      const ms = Math.max(1, Math.ceil(ttlMs))
      await redis.multi().sadd(key, member).pexpire(key, ms, 'GT').pexpire(key, ms, 'NX').exec()
    },
    members: async (key) => await redis.smembers(key),
    async takeMembers (key) {
      // MULTI on one key: no other client's command runs between the read and the delete.
      const results = await redis.multi().smembers(key).del(key).exec()
      const [error, members] = results?.[0] ?? [null, []]
      if (error !== null) throw error
      return Array.isArray(members) ? members.filter((member): member is string => typeof member === 'string') : []
    },
    async removeMember (key, member) {
      await redis.srem(key, member)
    }
  }
}

interface Held { value: string | Set<string>, expiresAt: number }

/** The embedded default's: one process, expiry checked on read and swept a few at a time on write. */
export function createMemoryArtifactStore (now: () => number = Date.now): ArtifactStore {
  const held = new Map<string, Held>()
  const live = (key: string): Held | undefined => {
    const found = held.get(key)
    if (found !== undefined && found.expiresAt <= now()) {
      held.delete(key)
      return undefined
    }
    return found
  }
  const sweep = (): void => {
    let looked = 0
    for (const [key, entry] of held) {
      if (++looked > 8) break
      if (entry.expiresAt <= now()) held.delete(key)
    }
  }
  return {
    async get (key) {
      const found = live(key)
      return found === undefined || typeof found.value !== 'string' ? null : found.value
    },
    async set (key, value, ttlMs) {
      sweep()
      held.delete(key)
      held.set(key, { value, expiresAt: ttlMs === undefined ? Infinity : now() + ttlMs })
    },
    async replace (key, value) {
      const found = live(key)
      if (found === undefined) return false
      found.value = value
      return true
    },
    async del (keys) {
      for (const key of keys) held.delete(key)
    },
    async addMember (key, member, ttlMs) {
      sweep()
      const found = live(key)
      const expiresAt = now() + ttlMs
      if (found === undefined || typeof found.value === 'string') {
        held.set(key, { value: new Set([member]), expiresAt })
        return
      }
      found.value.add(member)
      found.expiresAt = Math.max(found.expiresAt, expiresAt)
    },
    async members (key) {
      const found = live(key)
      return found === undefined || typeof found.value === 'string' ? [] : [...found.value]
    },
    async takeMembers (key) {
      const found = live(key)
      if (found === undefined || typeof found.value === 'string') return []
      held.delete(key)
      return [...found.value]
    },
    async removeMember (key, member) {
      const found = live(key)
      if (found !== undefined && typeof found.value !== 'string') found.value.delete(member)
    }
  }
}
