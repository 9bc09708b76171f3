import { sha256 } from '../../tokens/token.js'
import { DEFAULT_KEY_PREFIX, type RedisClient } from './client.js'
import { serviceUnavailable, StatusError } from '../../http/status.js'
import { accountStateTtlMs, type LimitVerdict, type LoginLimiter, type LoginLimits } from '../login-limiter.js'

/*
 * Keys (prefix default `{ats}:`), account and IP hashed so any username or address is only data:
 *   <p>lf:a:<sha256(username)>   hash   fails, level   (PX: accountStateTtlMs after the last failure)
 *   <p>lf:l:<sha256(username)>   string the lock; its PX is the lock's remaining time
 *   <p>lf:i:<sha256(ip)>         string failures in the current window (PX: the window)
 * Every step is one script, so concurrent attempts count exactly, and each step re-reads
 * the lock. Nothing is held between steps: a timed-out call leaves nothing behind.
 */
const SCRIPTS = {
  // KEYS: lock, ip   ARGV: maxFailuresPerIp   -> {0} allowed, {1, ms} locked, {2, ms} IP limited
  atsLimitCheck: {
    numberOfKeys: 2,
    lua: `
local lock = redis.call('PTTL', KEYS[1])
if lock > 0 then return {1, lock} end
local failures = tonumber(redis.call('GET', KEYS[2]) or '0')
if failures >= tonumber(ARGV[1]) then
  local ttl = redis.call('PTTL', KEYS[2])
  if ttl > 0 then return {2, ttl} end
end
return {0, 0}`
  },
  // KEYS: account, lock, ip   ARGV: maxFailures, lockoutMs, maxLockoutMs, stateTtlMs, ipWindowMs
  // -> {1, lockMs} counted (lockMs: the lock it started, or 0), {0, ttl} refused: already locked
  atsLimitFail: {
    numberOfKeys: 3,
    lua: `
local locked = redis.call('PTTL', KEYS[2])
if locked > 0 then return {0, locked} end
local ipFailures = redis.call('INCR', KEYS[3])
if ipFailures == 1 then redis.call('PEXPIRE', KEYS[3], ARGV[5]) end
local fails = redis.call('HINCRBY', KEYS[1], 'fails', 1)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
if fails < tonumber(ARGV[1]) then return {1, 0} end
local level = redis.call('HINCRBY', KEYS[1], 'level', 1) - 1
local lockMs = math.min(tonumber(ARGV[2]) * (2 ^ level), tonumber(ARGV[3]))
redis.call('HSET', KEYS[1], 'fails', 0)
redis.call('SET', KEYS[2], '1', 'PX', lockMs)
return {1, lockMs}`
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
  atsLimitCheck (lock: string, ip: string, maxFailuresPerIp: number): Promise<[number, number]>
  atsLimitFail (account: string, lock: string, ip: string, maxFailures: number, lockoutMs: number, maxLockoutMs: number, stateTtlMs: number, ipWindowMs: number): Promise<[number, number]>
  atsLimitSucceed (account: string, lock: string): Promise<number>
}

const digest = sha256

export function createRedisLoginLimiter (redis: RedisClient, limits: LoginLimits, keyPrefix = DEFAULT_KEY_PREFIX): LoginLimiter {
  for (const [name, script] of Object.entries(SCRIPTS)) redis.defineCommand(name, script)
  const commands = redis as unknown as LimiterCommands
  const keys = (accountKey: string) => {
    const id = digest(accountKey)
    return { account: `${keyPrefix}lf:a:${id}`, lock: `${keyPrefix}lf:l:${id}` }
  }
  const ipKey = (ip: string): string => `${keyPrefix}lf:i:${digest(ip)}`

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
      const [verdict, ttl] = await commands.atsLimitCheck(keys(accountKey).lock, ipKey(ip), limits.maxFailuresPerIp)
      if (verdict === 1) return { allowed: false, reason: 'account-locked', retryAfterMs: ttl }
      if (verdict === 2) return { allowed: false, reason: 'ip-limited', retryAfterMs: ttl }
      return { allowed: true }
    }),
    recordFailure: async (accountKey, ip) => await guarded(async () => {
      const { account, lock } = keys(accountKey)
      const [counted, ms] = await commands.atsLimitFail(account, lock, ipKey(ip), limits.maxFailures, limits.lockoutMs,
        limits.maxLockoutMs, accountStateTtlMs(limits), limits.ipWindowMs)
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
