import { DEFAULT_KEY_PREFIX } from '@auth-token-service/protocol/layout'
import { Type } from 'typebox'
import { ConfigError } from '../config-error.js'
import { keywords, refusal, variables, type Env } from '../variables.js'

export type RedisTopology =
  | { kind: 'single', url: string }
  | { kind: 'sentinel', sentinels: Array<{ host: string, port: number }>, name: string }
  | { kind: 'cluster', nodes: Array<{ host: string, port: number }> }

/** A number of acknowledgements every master must give, or 'auto': from the topology. */
export type MinReplicaAcks = number | 'auto'

const HOST_PORTS = { expected: 'host:port[,host:port...]' }

/** Where tokens live when not in-process, and what a revocation waits for there (src/core/stores/redis). */
export const RedisSchema = Type.Object({
  REDIS_URL: Type.Optional(Type.String({ format: 'uri', protocols: ['redis:', 'rediss:'], docDefault: 'unset: in-process store', description: 'Redis connection string (`redis://`, `rediss://`); set only one of `REDIS_URL`, `REDIS_CLUSTER_NODES`, `REDIS_SENTINELS`' })),
  REDIS_CLUSTER_NODES: Type.Optional(Type.String({ ...HOST_PORTS, description: 'a Redis Cluster instead: `host:port,host:port…` (a few nodes suffice; the rest are discovered); the key prefix must hold a hash tag' })),
  REDIS_SENTINELS: Type.Optional(Type.String({ ...HOST_PORTS, description: 'Redis behind Sentinel instead: the sentinels\' `host:port,…`' })),
  REDIS_SENTINEL_NAME: Type.String({ default: 'mymaster', description: 'the name of the master the sentinels watch' }),
  AUTH_REDIS_KEY_PREFIX: Type.String({ default: DEFAULT_KEY_PREFIX, description: 'prefix of every Redis key; with a Cluster it must hold a hash tag such as `{ats}`, so that each script\'s keys share a slot' }),
  AUTH_REDIS_COMMAND_TIMEOUT_MS: Type.Integer({ minimum: 10, maximum: 60_000, default: 500, description: 'longest wait for one Redis command before answering 503' }),
  AUTH_REDIS_MIN_REPLICA_ACKS: Type.Union([Type.Literal('auto'), Type.Integer({ minimum: 0, maximum: 16 })], { default: 'auto', caseInsensitive: true, description: 'replicas that must acknowledge a revocation before it answers `Success` (else 503 with `Retry-After`); `auto`: one wherever the Cluster or the sentinels list a replica of the master, connected or not (see ["What each topology guarantees"](scaling.md#what-each-topology-guarantees))' }),
  AUTH_REDIS_ACCEPT_LOSSY_PERSISTENCE: Type.Boolean({ default: false, description: '`true`: serve on a Redis whose persistence can bring logged-out tokens back after a restart of it (snapshots only, `appendfsync everysec` or `no`, or unreadable), accepting that risk; otherwise the service refuses to start on it (see [Redis settings](scaling.md#redis-settings))' })
}, { $id: 'redis', title: 'Redis', description: 'Where tokens live. Unset, they live in the process (one instance; a restart ends every session); with Redis, every instance shares them and a revocation holds everywhere.' })

export interface RedisSettings {
  /** Where tokens live: REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS (one of them); undefined: in-process. */
  redis: RedisTopology | undefined
  redisKeyPrefix: string
  redisCommandTimeoutMs: number
  /** Replica acknowledgements a revocation needs before `Success`; 'auto': from the topology. */
  redisMinReplicaAcks: MinReplicaAcks
  /** Serve on a Redis whose persistence can undo an acknowledged revocation on a restart: the operator accepts that risk. */
  acceptLossyPersistence: boolean
}

function hostPorts (name: 'REDIS_CLUSTER_NODES' | 'REDIS_SENTINELS', raw: string | undefined): Array<{ host: string, port: number }> | undefined {
  if (raw === undefined) return undefined
  return raw.split(',').map((entry) => {
    const match = /^\s*(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})\s*$/.exec(entry)
    const port = Number(match?.[2])
    if (match?.[1] === undefined || port < 1 || port > 65535) throw refusal(name, keywords(RedisSchema.properties[name]), entry.trim())
    return { host: match[1].replace(/^\[|\]$/g, ''), port }
  })
}

export function readRedis (env: Env): RedisSettings {
  const vars = variables(RedisSchema, env)
  const url = vars.read('REDIS_URL')
  const nodes = hostPorts('REDIS_CLUSTER_NODES', vars.read('REDIS_CLUSTER_NODES'))
  const sentinels = hostPorts('REDIS_SENTINELS', vars.read('REDIS_SENTINELS'))
  const given = [url === undefined ? [] : ['REDIS_URL'], nodes === undefined ? [] : ['REDIS_CLUSTER_NODES'], sentinels === undefined ? [] : ['REDIS_SENTINELS']].flat()
  if (given.length > 1) throw new ConfigError(given[1] ?? 'REDIS_URL', `set only one of ${given.join(', ')}`)
  const redis: RedisTopology | undefined = url !== undefined
    ? { kind: 'single', url }
    : nodes !== undefined
      ? { kind: 'cluster', nodes }
      : sentinels !== undefined ? { kind: 'sentinel', sentinels, name: vars.read('REDIS_SENTINEL_NAME') } : undefined
  return {
    redis,
    // One hash tag for every key: each script's keys share a slot in a Redis Cluster.
    redisKeyPrefix: vars.read('AUTH_REDIS_KEY_PREFIX'),
    redisCommandTimeoutMs: vars.read('AUTH_REDIS_COMMAND_TIMEOUT_MS'),
    // 'auto' (unset): the replicas each master is meant to have, as the cluster or the sentinels list them.
    redisMinReplicaAcks: vars.read('AUTH_REDIS_MIN_REPLICA_ACKS'),
    acceptLossyPersistence: vars.read('AUTH_REDIS_ACCEPT_LOSSY_PERSISTENCE')
  }
}

/** The prefix a Cluster needs, on the settings as the service will use them (a caller's overrides included). */
export function checkRedis (settings: RedisSettings): void {
  if (settings.redis?.kind === 'cluster' && !/\{[^{}]+\}/.test(settings.redisKeyPrefix)) {
    throw new ConfigError('AUTH_REDIS_KEY_PREFIX', 'must hold a hash tag such as {ats} with REDIS_CLUSTER_NODES, so that each script\'s keys share a slot')
  }
}
