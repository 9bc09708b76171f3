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
  /**
   * Marks the JSON object stored under `key` consumed (its `consumed` field set to `at`, epoch
   * seconds), keeping its expiry, in one step; false when there is none.
   */
  markConsumed (key: string, at: number): Promise<boolean>
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

/*
 * Scripts of one key each (a Cluster runs them on that key's node). A script is one command where a
 * MULTI is five (MULTI, the three commands, EXEC) and a read-then-write two round trips: each
 * command is the client's work too (issue 45: the refresh grant's CPU went a fifth to ioredis).
 */
const ARTIFACT_SCRIPTS = {
  // KEYS: set   ARGV: member, ttlMs: the member added, the set's expiry raised to at least ttlMs (never lowered).
  atsArtifactAddMember: {
    numberOfKeys: 1,
    lua: `redis.call('SADD', KEYS[1], ARGV[1])
local ttl = tonumber(ARGV[2])
-- PTTL is -1 for a set with no expiry (none here has one): it gets ttl too.
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1`
  },
  // KEYS: payload   ARGV: epoch seconds: the stored JSON object gets "consumed" last (JSON.parse keeps
  // the last of a repeated name), its expiry kept; 0 when there is no such object.
  atsArtifactConsume: {
    numberOfKeys: 1,
    lua: `local value = redis.call('GET', KEYS[1])
if not value or string.sub(value, 1, 1) ~= '{' or string.sub(value, -1) ~= '}' then return 0 end
local separator = ','
if value == '{}' then separator = '' end
redis.call('SET', KEYS[1], string.sub(value, 1, -2) .. separator .. '"consumed":' .. ARGV[1] .. '}', 'KEEPTTL')
return 1`
  }
}

interface ArtifactScripts {
  atsArtifactAddMember (key: string, member: string, ttlMs: number): Promise<number>
  atsArtifactConsume (key: string, at: number): Promise<number>
}

export function createRedisArtifactStore (redis: RedisClient): ArtifactStore {
  for (const [name, script] of Object.entries(ARTIFACT_SCRIPTS)) redis.defineCommand(name, script)
  const scripts = redis as unknown as ArtifactScripts
  return {
    get: async (key) => await redis.get(key),
    async set (key, value, ttlMs) {
      if (ttlMs === undefined) await redis.set(key, value)
      else await redis.set(key, value, 'PX', Math.max(1, Math.ceil(ttlMs)))
    },
    markConsumed: async (key, at) => await scripts.atsArtifactConsume(key, Math.floor(at)) === 1,
    async del (keys) {
      // One command a key: a Cluster spreads them over slots.
      await Promise.all(keys.map(async (key) => await redis.del(key)))
    },
    async addMember (key, member, ttlMs) {
      await scripts.atsArtifactAddMember(key, member, Math.max(1, Math.ceil(ttlMs)))
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
    async markConsumed (key, at) {
      const found = live(key)
      if (found === undefined || typeof found.value !== 'string') return false
      let parsed: unknown
      try {
        parsed = JSON.parse(found.value)
      } catch {
        return false
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return false
      found.value = JSON.stringify({ ...parsed, consumed: Math.floor(at) })
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
