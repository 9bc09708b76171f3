import { Cluster } from 'ioredis'
import type { RedisClient } from '@auth-token-service/protocol/redis-connection'

/**
 * The one Redis setting the service cannot run safely without: `maxmemory-policy noeviction`.
 *
 * Under any evicting policy Redis may drop a key when memory runs short: an account index
 * (so `user disable` ends none of the account's tokens), a lockout counter (so a lock is
 * lifted early), the revocation epoch (so a Login in flight outlives a revocation). A
 * `volatile-*` policy would not do either: every one of those keys carries a TTL, so each is
 * as evictable as under `allkeys-*`. With `noeviction` a full Redis refuses writes instead,
 * which the service answers with 503: it fails closed, and nothing is lost silently.
 */

export const REQUIRED_POLICY = 'noeviction'

/** A Redis that may evict keys: the service refuses to serve on it. */
export class EvictionPolicyError extends Error {
  readonly policy: string
  constructor (policy: string) {
    super(`Redis maxmemory-policy is "${policy}": it may evict account indexes, revocation epochs and lockout counters, ` +
      `so revocations and lockouts could be lost silently; refusing to serve until it is "${REQUIRED_POLICY}" ` +
      `(redis-cli CONFIG SET maxmemory-policy ${REQUIRED_POLICY}, and in redis.conf)`)
    this.policy = policy
    this.name = 'EvictionPolicyError'
  }
}

/** `maxmemory_policy` from INFO (CONFIG may be renamed away on managed Redis; INFO is not). */
async function policyOf (redis: RedisClient): Promise<string> {
  const info = await redis.info('memory')
  return /^maxmemory_policy:(\S+)/m.exec(info)?.[1] ?? 'unknown'
}

/** The first evicting policy found (on every master of a Cluster), or undefined when none evicts. */
export async function evictingPolicy (redis: RedisClient): Promise<string | undefined> {
  const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis]
  const policies = await Promise.all(nodes.map(policyOf))
  return policies.find((policy) => policy !== REQUIRED_POLICY)
}
