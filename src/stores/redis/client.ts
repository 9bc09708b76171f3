import { Cluster, Redis, type RedisOptions } from 'ioredis'

export { DEFAULT_KEY_PREFIX } from '../key-prefix.js'

/** A single Redis (plain or behind Sentinel) or a Redis Cluster: the token store works on either. */
export type RedisClient = Redis | Cluster

export type RedisTopology =
  | { kind: 'single', url: string }
  | { kind: 'sentinel', sentinels: Array<{ host: string, port: number }>, name: string }
  | { kind: 'cluster', nodes: Array<{ host: string, port: number }> }

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

/** The one place a client is made from the configured topology, with fail-fast options for each kind. */
export function createRedisClient (topology: RedisTopology, commandTimeoutMs: number): RedisClient {
  const options = failFastRedisOptions(commandTimeoutMs)
  switch (topology.kind) {
    case 'single':
      return new Redis(topology.url, options)
    case 'sentinel':
      return new Redis({ ...options, sentinels: topology.sentinels, name: topology.name })
    case 'cluster': {
      const { enableOfflineQueue, retryStrategy, lazyConnect, ...redisOptions } = options
      return new Cluster(topology.nodes, {
        redisOptions,
        enableOfflineQueue,
        lazyConnect,
        clusterRetryStrategy: retryStrategy,
        // Follow a failover or a resharding, but never loop.
        maxRedirections: 4
      })
    }
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
