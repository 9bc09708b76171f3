import { performance } from 'node:perf_hooks'
import { activeAt, decodeRecord, idles, idleSlackMs, type KeyLayout, type TokenRecord } from '@auth-token-service/protocol/layout'
import type { RedisClient } from '@auth-token-service/protocol/redis-connection'
import { serviceUnavailable, StatusError } from '../../../errors/status.js'

/*
 * The idle timeout (AUTH_IDLE_TIMEOUT_SECONDS) on Redis. Beside each Login token's key
 * lives its idle key (the guard package's layout.ts), set at issue and refresh with PX = the
 * timeout + its slack. Authenticate reads the two together (one MGET: they share a slot) and
 * refuses a token whose idle key is gone. A presentation pushes the idle key's expiry out again,
 * but at most once per slack per instance and token (a PEXPIRE, off the answer's path): the
 * token stops working between the timeout and the timeout plus the slack (at most a minute)
 * after it was last presented, never before. Redis's own clock runs every expiry; the slack is
 * measured on this process's monotonic clock. With the timeout off none of this is loaded: the
 * finder is batched-find.ts's, unchanged.
 */

const MAX_FIND_BATCH = 64
/** Tokens whose last touch this instance remembers; past it the memory starts again (a few extra touches, nothing wrong). */
const MAX_REMEMBERED = 100_000

export interface IdleTracking {
  /** Sets a token's idle key before it is issued or refreshed (so no read can find the token without it). */
  arm (tokenHash: string): Promise<void>
  /** Authenticate's read with the idle key beside the token's: null for an idle token (a key's record never is). `peek`: no touch. */
  find (tokenHash: string, peek?: boolean): Promise<TokenRecord | null>
  /** Whether the token's idle key is there (a Login refreshes only a token that is not idle). */
  alive (tokenHash: string): Promise<boolean>
}

interface PendingFind {
  tokenHash: string
  key: string
  idleKey: string
  peek: boolean
  resolve: (record: TokenRecord | null) => void
  reject: (error: StatusError) => void
}

export interface IdleTrackingOptions {
  redis: RedisClient
  keys: KeyLayout
  idleTimeoutMs: number
  onCommandError: ((error: unknown) => void) | undefined
  expireOnRead: boolean
  /** Monotonic milliseconds; injectable for tests. */
  now?: () => number
}

export function createIdleTracking ({ redis, keys, idleTimeoutMs, onCommandError, expireOnRead, now = () => performance.now() }: IdleTrackingOptions): IdleTracking {
  const slackMs = idleSlackMs(idleTimeoutMs)
  const lifeMs = idleTimeoutMs + slackMs
  const touched = new Map<string, number>()
  const unavailable = (error: unknown): StatusError => error instanceof StatusError ? error : serviceUnavailable('redis', error)

  /** At most once per slack per token from this instance; PEXPIRE never brings back a key already gone. */
  const seen = (tokenHash: string, idleKey: string): void => {
    const t = now()
    const last = touched.get(tokenHash)
    if (last !== undefined && t - last < slackMs) return
    if (touched.size >= MAX_REMEMBERED) touched.clear()
    touched.set(tokenHash, t)
    redis.pexpire(idleKey, lifeMs).catch((error: unknown) => {
      // Not touched: the next presentation tries again.
      touched.delete(tokenHash)
      onCommandError?.(error)
    })
  }

  const settle = (entry: PendingFind, value: string | null | undefined, idle: string | null | undefined): void => {
    if (value === null || value === undefined) {
      entry.resolve(null)
      return
    }
    const record = expireOnRead ? activeAt(decodeRecord(value), Date.now()) : decodeRecord(value)
    // An API key or an access token of the provider has no idle timeout (the contract's is a Login token's).
    if (record === null || !idles(record)) {
      entry.resolve(record)
      return
    }
    if (idle === null || idle === undefined) {
      entry.resolve(null)
      return
    }
    if (!entry.peek) seen(entry.tokenHash, entry.idleKey)
    entry.resolve(record)
  }

  const fail = (entry: PendingFind, error: unknown): void => {
    onCommandError?.(error)
    entry.reject(unavailable(error))
  }

  let pending: PendingFind[] = []
  const flush = (): void => {
    const batch = pending
    pending = []
    // A Cluster: one MGET per find (its two keys share a slot; the batch's do not).
    if (redis.isCluster || batch.length === 1) {
      for (const entry of batch) {
        redis.mget(entry.key, entry.idleKey).then(([value, idle]) => { settle(entry, value, idle) }, (error: unknown) => { fail(entry, error) })
      }
      return
    }
    redis.mget(batch.flatMap((entry) => [entry.key, entry.idleKey])).then((values) => {
      batch.forEach((entry, index) => { settle(entry, values[2 * index], values[2 * index + 1]) })
    }, (error: unknown) => {
      for (const entry of batch) fail(entry, error)
    })
  }

  return {
    async arm (tokenHash) {
      const idleKey = keys.idleKeyOf(tokenHash)
      if (idleKey === undefined) return
      await redis.set(idleKey, '1', 'PX', lifeMs)
      touched.set(tokenHash, now())
    },
    async alive (tokenHash) {
      const idleKey = keys.idleKeyOf(tokenHash)
      return idleKey !== undefined && await redis.exists(idleKey) === 1
    },
    find: (tokenHash, peek = false) => new Promise((resolve, reject) => {
      const key = keys.keyOf(tokenHash)
      const idleKey = keys.idleKeyOf(tokenHash)
      if (key === undefined || idleKey === undefined) {
        resolve(null)
        return
      }
      if (pending.length === 0) setImmediate(flush)
      pending.push({ tokenHash, key, idleKey, peek, resolve, reject })
      if (pending.length === MAX_FIND_BATCH) flush()
    })
  }
}
