import type { Cluster, Redis, RedisOptions } from 'ioredis'

/*
 * The connections direct mode and the service's token store make to Redis. Types only from
 * ioredis here: the guard's package has it as an optional peer, loaded only in direct mode.
 */

/** A single Redis (plain or behind Sentinel) or a Redis Cluster: the token store and the guard work on either. */
export type RedisClient = Redis | Cluster

/** Options that make a client fail fast instead of queueing while Redis is away. */
export function failFastRedisOptions (commandTimeoutMs: number): RedisOptions {
  return {
    commandTimeout: commandTimeoutMs,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: Math.max(1000, commandTimeoutMs),
    retryStrategy: (attempt: number) => Math.min(50 * 2 ** attempt, 2000),
    lazyConnect: true,
    // A command that already failed (and answered 503) must not run later after a reconnect:
    // a Logout reported as failed would end its token after all, a refresh would extend one.
    autoResendUnfulfilledCommands: false
  }
}

/** The delay before a subscriber's next connection attempt: 50 ms, doubling, at most 1 s. */
export const resubscribeDelayMs = (attempt: number): number => Math.min(50 * 2 ** attempt, 1000)

/**
 * A second connection to the same Redis for SUBSCRIBE (a subscribed connection can do nothing
 * else). It keeps trying to reconnect and queues its SUBSCRIBE meanwhile; with `reconnect` false
 * (a node of a cluster, where the caller picks a node afresh) it ends at its first cut.
 */
export function duplicateForSubscribing (client: Redis, connectionName: string, reconnect = true): Redis {
  return client.duplicate({
    connectionName,
    lazyConnect: false,
    autoResubscribe: false,
    enableOfflineQueue: true,
    maxRetriesPerRequest: null,
    // A cluster node's pool connection is made read-only on replicas; a subscriber needs none of it.
    readOnly: false,
    retryStrategy: reconnect ? resubscribeDelayMs : () => null
  })
}

/** Resolves once the client is ready (connecting a lazy one); rejects if its connection ends first. */
export async function whenReady (redis: RedisClient): Promise<void> {
  if (redis.status === 'ready') return
  if (redis.status === 'wait') await redis.connect()
  if ((redis.status as string) !== 'ready') {
    await new Promise<void>((resolve, reject) => {
      const onReady = (): void => { redis.off('end', onEnd); resolve() }
      const onEnd = (): void => { redis.off('ready', onReady); reject(new Error('Redis connection ended')) }
      redis.once('ready', onReady)
      redis.once('end', onEnd)
    })
  }
}
