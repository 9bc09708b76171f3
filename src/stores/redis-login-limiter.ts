import { createHash } from 'node:crypto'
import { DEFAULT_KEY_PREFIX, type RedisClient } from './redis-client.js'
import { serviceUnavailable, StatusError } from '../lib/status.js'
import { accountStateTtlMs, BUSY_RETRY_MS, IN_FLIGHT_TTL_MS, type LimitVerdict, type LoginLimiter, type LoginLimits } from './login-limiter.js'

/*
 * Keys (prefix default `{ats}:`), account and IP hashed so any username or address is only data:
 *   <p>lf:a:<sha256(username)>   hash   fails, level   (PX: accountStateTtlMs after the last failure)
 *   <p>lf:l:<sha256(username)>   string the lock; its PX is the lock's remaining time
 *   <p>lf:n:<sha256(username)>   string attempts in flight (PX: IN_FLIGHT_TTL_MS, so a lost one frees itself)
 *   <p>lf:i:<sha256(ip)>         string failures in the current window (PX: the window)
 *   <p>lf:m:<sha256(ip)>         string attempts in flight from the IP
 * Every step is one script, so concurrent attempts count exactly.
 */

// A verdict as the scripts return it: {0} allowed, {1, ms} account locked, {2, ms} IP limited.
const VERDICT = `
local function verdict(lock, account, accountBusy, ip, ipBusy, maxFails, maxPerIp)
  local locked = redis.call('PTTL', lock)
  if locked > 0 then return {1, locked} end
  local ipFails = tonumber(redis.call('GET', ip) or '0')
  if ipFails + tonumber(redis.call('GET', ipBusy) or '0') >= maxPerIp then
    local ttl = redis.call('PTTL', ip)
    if ttl <= 0 then ttl = ${BUSY_RETRY_MS} end
    return {2, ttl}
  end
  local fails = tonumber(redis.call('HGET', account, 'fails') or '0')
  if fails + tonumber(redis.call('GET', accountBusy) or '0') >= maxFails then return {1, ${BUSY_RETRY_MS}} end
  return {0, 0}
end
local function settle(key)
  local n = tonumber(redis.call('GET', key) or '0')
  if n > 1 then redis.call('DECR', key) elseif n == 1 then redis.call('DEL', key) end
end
`

const SCRIPTS = {
  // KEYS: lock, account, accountBusy, ip, ipBusy   ARGV: maxFailures, maxFailuresPerIp
  atsLimitCheck: {
    numberOfKeys: 5,
    lua: `${VERDICT}
return verdict(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], tonumber(ARGV[1]), tonumber(ARGV[2]))`
  },
  // KEYS: lock, account, accountBusy, ip, ipBusy   ARGV: maxFailures, maxFailuresPerIp, inFlightTtlMs
  atsLimitBegin: {
    numberOfKeys: 5,
    lua: `${VERDICT}
local answer = verdict(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], tonumber(ARGV[1]), tonumber(ARGV[2]))
if answer[1] == 0 then
  redis.call('INCR', KEYS[3])
  redis.call('PEXPIRE', KEYS[3], ARGV[3])
  redis.call('INCR', KEYS[5])
  redis.call('PEXPIRE', KEYS[5], ARGV[3])
end
return answer`
  },
  // KEYS: account, lock, ip, accountBusy, ipBusy   ARGV: maxFailures, lockoutMs, maxLockoutMs, stateTtlMs, ipWindowMs
  atsLimitFail: {
    numberOfKeys: 5,
    lua: `${VERDICT}
settle(KEYS[4])
settle(KEYS[5])
local ipFailures = redis.call('INCR', KEYS[3])
if ipFailures == 1 then redis.call('PEXPIRE', KEYS[3], ARGV[5]) end
local fails = redis.call('HINCRBY', KEYS[1], 'fails', 1)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
if fails < tonumber(ARGV[1]) then return 0 end
local level = redis.call('HINCRBY', KEYS[1], 'level', 1) - 1
local lockMs = math.min(tonumber(ARGV[2]) * (2 ^ level), tonumber(ARGV[3]))
redis.call('HSET', KEYS[1], 'fails', 0)
redis.call('SET', KEYS[2], '1', 'PX', lockMs)
return lockMs`
  },
  // KEYS: account, lock, accountBusy, ipBusy   ARGV: reset ('1': a success; '0': a release)
  atsLimitSettle: {
    numberOfKeys: 4,
    lua: `${VERDICT}
settle(KEYS[3])
settle(KEYS[4])
if ARGV[1] == '1' then redis.call('DEL', KEYS[1], KEYS[2]) end
return 1`
  }
} as const

interface LimiterCommands {
  atsLimitCheck (lock: string, account: string, accountBusy: string, ip: string, ipBusy: string, maxFailures: number, maxFailuresPerIp: number): Promise<[number, number]>
  atsLimitBegin (lock: string, account: string, accountBusy: string, ip: string, ipBusy: string, maxFailures: number, maxFailuresPerIp: number, inFlightTtlMs: number): Promise<[number, number]>
  atsLimitFail (account: string, lock: string, ip: string, accountBusy: string, ipBusy: string, maxFailures: number, lockoutMs: number, maxLockoutMs: number, stateTtlMs: number, ipWindowMs: number): Promise<number>
  atsLimitSettle (account: string, lock: string, accountBusy: string, ipBusy: string, reset: '0' | '1'): Promise<number>
}

const digest = (text: string): string => createHash('sha256').update(text).digest('base64url')

function toVerdict ([code, ms]: [number, number]): LimitVerdict {
  if (code === 1) return { allowed: false, reason: 'account-locked', retryAfterMs: ms }
  if (code === 2) return { allowed: false, reason: 'ip-limited', retryAfterMs: ms }
  return { allowed: true }
}

export function createRedisLoginLimiter (redis: RedisClient, limits: LoginLimits, keyPrefix = DEFAULT_KEY_PREFIX): LoginLimiter {
  for (const [name, script] of Object.entries(SCRIPTS)) redis.defineCommand(name, script)
  const commands = redis as unknown as LimiterCommands
  const accountKeys = (accountKey: string) => {
    const id = digest(accountKey)
    return { account: `${keyPrefix}lf:a:${id}`, lock: `${keyPrefix}lf:l:${id}`, busy: `${keyPrefix}lf:n:${id}` }
  }
  const ipKeys = (ip: string) => {
    const id = digest(ip)
    return { ip: `${keyPrefix}lf:i:${id}`, busy: `${keyPrefix}lf:m:${id}` }
  }

  async function guarded<T> (work: () => Promise<T>): Promise<T> {
    try {
      return await work()
    } catch (error) {
      if (error instanceof StatusError) throw error
      throw serviceUnavailable(error)
    }
  }

  return {
    begin: async (accountKey, clientIp) => await guarded(async () => {
      const a = accountKeys(accountKey)
      const i = ipKeys(clientIp)
      return toVerdict(await commands.atsLimitBegin(a.lock, a.account, a.busy, i.ip, i.busy, limits.maxFailures, limits.maxFailuresPerIp, IN_FLIGHT_TTL_MS))
    }),
    check: async (accountKey, clientIp) => await guarded(async () => {
      const a = accountKeys(accountKey)
      const i = ipKeys(clientIp)
      return toVerdict(await commands.atsLimitCheck(a.lock, a.account, a.busy, i.ip, i.busy, limits.maxFailures, limits.maxFailuresPerIp))
    }),
    recordFailure: async (accountKey, clientIp) => await guarded(async () => {
      const a = accountKeys(accountKey)
      const i = ipKeys(clientIp)
      const lockedForMs = await commands.atsLimitFail(a.account, a.lock, i.ip, a.busy, i.busy, limits.maxFailures, limits.lockoutMs,
        limits.maxLockoutMs, accountStateTtlMs(limits), limits.ipWindowMs)
      return { lockedForMs }
    }),
    recordSuccess: async (accountKey, clientIp) => await guarded(async () => {
      const a = accountKeys(accountKey)
      // Without an IP there is no IP slot to settle: a key of the same hash slot that never exists stands in.
      await commands.atsLimitSettle(a.account, a.lock, a.busy, clientIp === undefined ? `${keyPrefix}lf:m:none` : ipKeys(clientIp).busy, '1')
    }),
    release: async (accountKey, clientIp) => await guarded(async () => {
      const a = accountKeys(accountKey)
      await commands.atsLimitSettle(a.account, a.lock, a.busy, ipKeys(clientIp).busy, '0')
    }),
    // The client belongs to the token store, which closes it.
    async close () {}
  }
}
