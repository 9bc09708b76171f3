import { accountBucket, sha256 } from '@auth-token-service/protocol/token'
import { DEFAULT_KEY_PREFIX, keyLayout } from '@auth-token-service/protocol/layout'
import { type RedisClient } from '@auth-token-service/protocol/redis-connection'
import { serviceUnavailable, StatusError } from '../../../errors/status.js'
import { accountStateTtlMs, type LimitVerdict, type LoginLimiter, type LoginLimits } from '../login-limiter.js'

/*
 * Keys, account and IP hashed so any username or address is only data, each in a bucket of its
 * digest (`{atsAb}` for the default prefix, layout.ts of packages/protocol), so a Cluster spreads them over every master;
 * an account's two keys share a slot, an address's key is in its own:
 *   <b>lf:a:<sha256(username)>   hash   fails, level   (PX: accountStateTtlMs after the last failure)
 *   <b>lf:l:<sha256(username)>   string the lock; its PX is the lock's remaining time
 *   <b>lf:i:<sha256(ip)>         string failures in the current window (PX: the window)
 * Every step on an account is one script, so concurrent attempts count exactly, and each step
 * re-reads the lock; the address's counter is one script of its own (another slot), counted after
 * the account's failure was. Nothing is held between steps: a timed-out call leaves nothing behind.
 * (Counters kept under the prefix itself by earlier versions are not read: a deploy resets them.)
 */
const SCRIPTS = {
  // KEYS: lock   -> the lock's remaining ms, 0 when none
  atsLimitLock: {
    numberOfKeys: 1,
    lua: `
local lock = redis.call('PTTL', KEYS[1])
if lock > 0 then return lock end
return 0`
  },
  // KEYS: ip   ARGV: maxFailuresPerIp   -> the limit's remaining ms, 0 when not limited
  atsLimitIp: {
    numberOfKeys: 1,
    lua: `
local failures = tonumber(redis.call('GET', KEYS[1]) or '0')
if failures >= tonumber(ARGV[1]) then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then return ttl end
end
return 0`
  },
  // KEYS: account, lock   ARGV: maxFailures, lockoutMs, maxLockoutMs, stateTtlMs
  // -> {1, lockMs} counted (lockMs: the lock it started, or 0), {0, ttl} refused: already locked
  atsLimitFail: {
    numberOfKeys: 2,
    lua: `
local locked = redis.call('PTTL', KEYS[2])
if locked > 0 then return {0, locked} end
local fails = redis.call('HINCRBY', KEYS[1], 'fails', 1)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
if fails < tonumber(ARGV[1]) then return {1, 0} end
local level = redis.call('HINCRBY', KEYS[1], 'level', 1) - 1
local lockMs = math.min(tonumber(ARGV[2]) * (2 ^ level), tonumber(ARGV[3]))
redis.call('HSET', KEYS[1], 'fails', 0)
redis.call('SET', KEYS[2], '1', 'PX', lockMs)
return {1, lockMs}`
  },
  // KEYS: ip   ARGV: ipWindowMs
  atsLimitFailIp: {
    numberOfKeys: 1,
    lua: `
if redis.call('INCR', KEYS[1]) == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 1`
  },
  // KEYS: account, lock   -> 0 reset, or the lock's remaining ms (a lock that started meanwhile stays)
  atsLimitSucceed: {
    numberOfKeys: 2,
    lua: `
local locked = redis.call('PTTL', KEYS[2])
if locked > 0 then return locked end
redis.call('DEL', KEYS[1])
return 0`
  }
} as const

interface LimiterCommands {
  atsLimitLock (lock: string): Promise<number>
  atsLimitIp (ip: string, maxFailuresPerIp: number): Promise<number>
  atsLimitFail (account: string, lock: string, maxFailures: number, lockoutMs: number, maxLockoutMs: number, stateTtlMs: number): Promise<[number, number]>
  atsLimitFailIp (ip: string, ipWindowMs: number): Promise<number>
  atsLimitSucceed (account: string, lock: string): Promise<number>
}

const digest = sha256

export function createRedisLoginLimiter (redis: RedisClient, limits: LoginLimits, keyPrefix = DEFAULT_KEY_PREFIX): LoginLimiter {
  for (const [name, script] of Object.entries(SCRIPTS)) redis.defineCommand(name, script)
  const commands = redis as unknown as LimiterCommands
  const layout = keyLayout(keyPrefix)
  const keys = (accountKey: string): { account: string, lock: string } => {
    const id = digest(accountKey)
    const p = layout.bucketPrefix(accountBucket(id))
    return { account: `${p}lf:a:${id}`, lock: `${p}lf:l:${id}` }
  }
  const ipKey = (ip: string): string => {
    const id = digest(ip)
    return `${layout.bucketPrefix(accountBucket(id))}lf:i:${id}`
  }

  async function guarded<T> (work: () => Promise<T>): Promise<T> {
    try {
      return await work()
    } catch (error) {
      if (error instanceof StatusError) throw error
      throw serviceUnavailable('redis', error)
    }
  }

  return {
    check: async (accountKey, ip): Promise<LimitVerdict> => await guarded(async () => {
      // Two slots, asked at once: one round trip.
      const [lock, limited] = await Promise.all([commands.atsLimitLock(keys(accountKey).lock), commands.atsLimitIp(ipKey(ip), limits.maxFailuresPerIp)])
      if (lock > 0) return { allowed: false, reason: 'account-locked', retryAfterMs: lock }
      if (limited > 0) return { allowed: false, reason: 'ip-limited', retryAfterMs: limited }
      return { allowed: true }
    }),
    recordFailure: async (accountKey, ip) => await guarded(async () => {
      const { account, lock } = keys(accountKey)
      const [counted, ms] = await commands.atsLimitFail(account, lock, limits.maxFailures, limits.lockoutMs,
        limits.maxLockoutMs, accountStateTtlMs(limits))
      if (counted === 1) await commands.atsLimitFailIp(ipKey(ip), limits.ipWindowMs)
      return counted === 1 ? { counted: true, lockedForMs: ms } : { counted: false, retryAfterMs: ms }
    }),
    recordSuccess: async (accountKey): Promise<LimitVerdict> => await guarded(async () => {
      const { account, lock } = keys(accountKey)
      const locked = await commands.atsLimitSucceed(account, lock)
      return locked > 0 ? { allowed: false, reason: 'account-locked', retryAfterMs: locked } : { allowed: true }
    }),
    lockedForMs: async (accountKey) => await guarded(async () => Math.max(0, await redis.pttl(keys(accountKey).lock))),
    unlock: async (accountKey) => {
      const { account, lock } = keys(accountKey)
      // One command, both keys: they share the prefix's hash tag in a cluster.
      await guarded(async () => await redis.del(account, lock))
    },
    // The client belongs to the token store, which closes it.
    async close () {}
  }
}
