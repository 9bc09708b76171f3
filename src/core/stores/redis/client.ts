import { Cluster, Redis } from 'ioredis'
import { failFastRedisOptions, type RedisClient } from '@auth-token-service/protocol/redis-connection'

import type { RedisTopology } from '../../../config/parts/redis.js'

export type { RedisTopology }

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
