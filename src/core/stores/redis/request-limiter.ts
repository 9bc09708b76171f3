import { accountBucket, sha256 } from '@auth-token-service/protocol/token'
import { DEFAULT_KEY_PREFIX, keyLayout } from '@auth-token-service/protocol/layout'
import { type RedisClient } from '@auth-token-service/protocol/redis-connection'
import { serviceUnavailable } from '../../../errors/status.js'
import type { RequestLimiter, RequestLimits, RequestVerdict } from '../request-limiter.js'

/*
 * One key a client and scope, the client hashed so that any address is only data, in the bucket
 * of its digest (as the login limiter's keys: layout.ts of packages/protocol), so that a Cluster
 * spreads the clients over every master and the one key of the script names its slot:
 *   <b>rl:<scope>:<sha256(client)>   string   requests in the window (PX: what is left of the window)
 * Shared by every instance on the Redis. Past the limit the script only reads: a flood's refused
 * requests write nothing (no AOF write, no fsync).
 */
const SCRIPTS = {
  // KEYS: count   ARGV: max, windowMs   -> 0 allowed (counted), else the window's remaining ms
  atsRequestHit: {
    numberOfKeys: 1,
    lua: `
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then
  if tonumber(redis.call('GET', KEYS[1]) or '0') >= tonumber(ARGV[1]) then return ttl end
  redis.call('INCR', KEYS[1])
  return 0
end
redis.call('SET', KEYS[1], 1, 'PX', ARGV[2])
return 0`
  }
} as const

interface RequestLimiterCommands {
  atsRequestHit (key: string, max: number, windowMs: number): Promise<number>
}

export function createRedisRequestLimiter (redis: RedisClient, limits: RequestLimits, keyPrefix = DEFAULT_KEY_PREFIX): RequestLimiter {
  for (const [name, script] of Object.entries(SCRIPTS)) redis.defineCommand(name, script)
  const commands = redis as unknown as RequestLimiterCommands
  const layout = keyLayout(keyPrefix)
  return {
    async hit (scope, client): Promise<RequestVerdict> {
      const id = sha256(client)
      const key = `${layout.bucketPrefix(accountBucket(id))}rl:${scope}:${id}`
      let remaining: number
      try {
        remaining = await commands.atsRequestHit(key, limits.max, limits.windowMs)
      } catch (error) {
        // Fails closed, as every Redis failure: no limit that could not be checked is waved through.
        throw serviceUnavailable('redis', error)
      }
      return remaining > 0 ? { allowed: false, retryAfterMs: remaining } : { allowed: true }
    },
    // The client belongs to the token store, which closes it.
    async close () {}
  }
}
