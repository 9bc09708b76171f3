import { decodeRecord, idles, keyLayout, revocationChannel, type TokenRecord } from '@auth-token-service/protocol/layout'
import { createRevocationFeed, type RevocationSubscription } from '@auth-token-service/protocol/redis-feed'
import { failFastRedisOptions, whenReady, type RedisClient } from '@auth-token-service/protocol/redis-connection'
import { within, type Verified, type Verifier } from './verifiers.js'

/*
 * Direct mode: straight against the token service's Redis, through the key layout the
 * service writes (layout.ts), one GET of the token's key. Loaded only in direct mode (the
 * guard imports it when given `redis` or `redisUrl`), so ioredis, an optional peer of this
 * package, is needed only here.
 */

export interface DirectVerifierOptions {
  redis?: RedisClient | undefined
  redisUrl?: string | undefined
  keyPrefix: string
  timeoutMs: number
  onError: (error: Error) => void
  /** The service runs with AUTH_IDLE_TIMEOUT_SECONDS: a Login token whose idle key is gone is refused. */
  idleTimeout?: boolean | undefined
}

/**
 * The record with its groups frozen: a cache hands the same array to every request it answers,
 * and no handler may change what the next one sees.
 */
function decoded (value: string): TokenRecord | null {
  const record = decodeRecord(value)
  if (record?.groups !== undefined) Object.freeze(record.groups)
  return record
}

/** A client of our own for `url`, failing fast (no queue while Redis is away). */
async function connect (url: string, timeoutMs: number, onError: (error: Error) => void): Promise<RedisClient> {
  let Redis: typeof import('ioredis').Redis
  try {
    ({ Redis } = await import('ioredis'))
  } catch (cause) {
    throw new Error('auth-token-guard: direct mode (redisUrl) needs ioredis: npm install ioredis', { cause })
  }
  const redis = new Redis(url, failFastRedisOptions(timeoutMs))
  redis.on('error', onError)
  return redis
}

/**
 * One GET of the token's key; the record's own `expiresAt` is not held against this machine's
 * clock, which may be wrong: the key's expiry (Redis's clock, a few ms past the named second)
 * bounds the token. The service refuses to serve on an evicting Redis and says so; a reader need
 * not check again. It closes only the connections it opened (a handed-in client stays open).
 */
export async function directVerifier (options: DirectVerifierOptions): Promise<Verifier> {
  const owned = options.redis === undefined
  const redis = options.redis ?? await connect(options.redisUrl ?? 'redis://127.0.0.1:6379', options.timeoutMs, options.onError)
  const keys = keyLayout(options.keyPrefix)
  let feed: RevocationSubscription | undefined
  let stopWatching: (() => void) | undefined

  const idleTimeout = options.idleTimeout === true
  /**
   * The record, or null. With the idle timeout, the token's idle key is read with it (one MGET:
   * the two share a slot) and a Login token without one is idle: refused. Only the service's
   * Authenticate, /auth/verify and /auth/introspect keep a token from going idle (the contract);
   * a guard only reads.
   */
  const read = async (key: string, hash: string): Promise<TokenRecord | null> => {
    if (!idleTimeout) {
      const value = await redis.get(key)
      return value === null ? null : decoded(value)
    }
    const [value, idle] = await redis.mget(key, keys.idleKeyOf(hash) ?? key)
    const record = value === null || value === undefined ? null : decoded(value)
    return record !== null && idles(record) && (idle === null || idle === undefined) ? null : record
  }
  const find = async (key: string, hash: string): Promise<Verified | null> => {
    const record = await read(key, hash)
    return record === null ? null : { record }
  }
  /**
   * With a cache to keep: the key's PTTL beside the GET (sent together, one round trip), the
   * remaining life by Redis's own clock, so the guard's wall clock never decides an expiry.
   */
  const findWithRemaining = async (key: string, hash: string): Promise<Verified | null> => {
    const [record, pttl] = await Promise.all([read(key, hash), redis.pttl(key)])
    return record === null ? null : { record, remainingMs: Math.max(0, pttl) }
  }
  return {
    async verify (_token, hash) {
      // A string that names no key is no token of the service's: no round trip.
      const key = keys.keyOf(hash)
      if (key === undefined) return null
      // The race also bounds a handed-in client that queues commands while Redis is away.
      return await within(stopWatching === undefined ? find(key, hash) : findWithRemaining(key, hash), options.timeoutMs)
    },
    watch (watcher) {
      feed ??= createRevocationFeed(redis, revocationChannel(options.keyPrefix))
      stopWatching = feed.watch(watcher)
    },
    async settle (waitMs) {
      // A lazy client fails its first command while it connects: connect first, but never wait long.
      await within(whenReady(redis), waitMs).catch(() => {})
    },
    async close () {
      stopWatching?.()
      await feed?.close()
      if (owned) await redis.quit().catch(() => { redis.disconnect() })
    }
  }
}
