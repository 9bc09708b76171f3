import { serviceUnavailable, StatusError } from '../../../errors/status.js'
import { activeAt, decodeRecord, type TokenRecord } from '@auth-token-service/protocol/layout'
import type { RedisClient } from '@auth-token-service/protocol/redis-connection'

const MAX_FIND_BATCH = 128

interface PendingFind {
  key: string
  resolve: (record: TokenRecord | null) => void
  reject: (error: StatusError) => void
}

/**
 * Authenticate's one read. Finds made in the same turn of the event loop (the requests of
 * many connections, handled one after another) go to Redis as one MGET: under load most of
 * a lone GET's cost is its own socket write and command bookkeeping, not Redis's work. A
 * lone find is a plain GET. Either way a find is one round trip, and it waits for the
 * batch at most until the end of the loop turn it was made in (setImmediate). An MGET's
 * keys must share a Cluster slot, and tokens are spread over the buckets' slots, so a
 * Cluster gets GETs, each to the master of its token's slot. A string that names no key (keyOf:
 * undefined) is no token: null, with no round trip.
 */
export function createFinder (redis: RedisClient, keyOf: (tokenHash: string) => string | undefined, onCommandError: ((error: unknown) => void) | undefined, expireOnRead: boolean): (tokenHash: string) => Promise<TokenRecord | null> {
  const decode = (value: string | null | undefined): TokenRecord | null => {
    if (value === null || value === undefined) return null
    return expireOnRead ? activeAt(decodeRecord(value), Date.now()) : decodeRecord(value)
  }
  const unavailable = (error: unknown): StatusError => error instanceof StatusError ? error : serviceUnavailable('redis', error)
  const get = (entry: PendingFind): void => {
    redis.get(entry.key).then((value) => { entry.resolve(decode(value)) }, (error: unknown) => {
      onCommandError?.(error)
      entry.reject(unavailable(error))
    })
  }
  if (redis.isCluster) {
    return async (tokenHash) => {
      const key = keyOf(tokenHash)
      if (key === undefined) return null
      return await new Promise((resolve, reject) => { get({ key, resolve, reject }) })
    }
  }

  let pending: PendingFind[] = []
  const flush = (): void => {
    const batch = pending
    pending = []
    if (batch.length <= 1) {
      if (batch[0] !== undefined) get(batch[0])
      return
    }
    redis.mget(batch.map((entry) => entry.key)).then((values) => {
      batch.forEach((entry, index) => { entry.resolve(decode(values[index])) })
    }, (error: unknown) => {
      const failure = unavailable(error)
      // Counted per find, as when each was a GET of its own: every one of them failed a request.
      for (const entry of batch) {
        onCommandError?.(error)
        entry.reject(failure)
      }
    })
  }
  // Not an async function: the promise made here is the one the caller awaits (one fewer per find).
  return (tokenHash) => new Promise((resolve, reject) => {
    const key = keyOf(tokenHash)
    if (key === undefined) {
      resolve(null)
      return
    }
    if (pending.length === 0) setImmediate(flush)
    pending.push({ key, resolve, reject })
    if (pending.length === MAX_FIND_BATCH) flush()
  })
}
