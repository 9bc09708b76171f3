import { performance } from 'node:perf_hooks'
import { accountStateTtlMs, lockDurationMs, type LimitVerdict, type LoginLimiter, type LoginLimits } from '../login-limiter.js'

interface AccountState { failures: number, level: number, lockedUntil: number, forgetAt: number }
interface IpState { failures: number, windowEnds: number }

/** The embedded default's limiter: the Redis limiter's rules in one process (each method atomic). */
export function createMemoryLoginLimiter (limits: LoginLimits, now: () => number = () => performance.now()): LoginLimiter {
  const accounts = new Map<string, AccountState>()
  const ips = new Map<string, IpState>()

  const account = (key: string, t: number): AccountState | undefined => {
    const state = accounts.get(key)
    if (state !== undefined && state.forgetAt <= t) {
      accounts.delete(key)
      return undefined
    }
    return state
  }
  const ip = (key: string, t: number): IpState | undefined => {
    const state = ips.get(key)
    if (state !== undefined && state.windowEnds <= t) {
      ips.delete(key)
      return undefined
    }
    return state
  }
  /** Amortized clean-up of the oldest entries instead of a timer. */
  const prune = (t: number): void => {
    let looked = 0
    for (const key of accounts.keys()) { if (++looked > 4) break; account(key, t) }
    looked = 0
    for (const key of ips.keys()) { if (++looked > 4) break; ip(key, t) }
  }
  const lockedFor = (a: AccountState | undefined, t: number): number => a !== undefined && a.lockedUntil > t ? a.lockedUntil - t : 0

  return {
    async check (accountKey, clientIp): Promise<LimitVerdict> {
      const t = now()
      const locked = lockedFor(account(accountKey, t), t)
      if (locked > 0) return { allowed: false, reason: 'account-locked', retryAfterMs: locked }
      const i = ip(clientIp, t)
      if (i !== undefined && i.failures >= limits.maxFailuresPerIp) return { allowed: false, reason: 'ip-limited', retryAfterMs: i.windowEnds - t }
      return { allowed: true }
    },
    async recordFailure (accountKey, clientIp) {
      const t = now()
      prune(t)
      let a = account(accountKey, t)
      const locked = lockedFor(a, t)
      if (locked > 0) return { counted: false, retryAfterMs: locked }
      let i = ip(clientIp, t)
      if (i === undefined) ips.set(clientIp, i = { failures: 0, windowEnds: t + limits.ipWindowMs })
      i.failures++
      if (a === undefined) accounts.set(accountKey, a = { failures: 0, level: 0, lockedUntil: 0, forgetAt: 0 })
      a.forgetAt = t + accountStateTtlMs(limits)
      a.failures++
      if (a.failures < limits.maxFailures) return { counted: true, lockedForMs: 0 }
      const lockedForMs = lockDurationMs(limits, a.level)
      a.level++
      a.failures = 0
      a.lockedUntil = t + lockedForMs
      return { counted: true, lockedForMs }
    },
    async recordSuccess (accountKey): Promise<LimitVerdict> {
      const t = now()
      const locked = lockedFor(account(accountKey, t), t)
      if (locked > 0) return { allowed: false, reason: 'account-locked', retryAfterMs: locked }
      accounts.delete(accountKey)
      return { allowed: true }
    },
    async lockedForMs (accountKey) {
      const t = now()
      return lockedFor(account(accountKey, t), t)
    },
    async unlock (accountKey) {
      accounts.delete(accountKey)
    },
    async close () {
      accounts.clear()
      ips.clear()
    }
  }
}
