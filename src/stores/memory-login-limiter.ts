import { performance } from 'node:perf_hooks'
import { accountStateTtlMs, BUSY_RETRY_MS, lockDurationMs, type LimitVerdict, type LoginLimiter, type LoginLimits } from './login-limiter.js'

interface AccountState { failures: number, level: number, lockedUntil: number, forgetAt: number }
interface IpState { failures: number, windowEnds: number }

/** The embedded default's limiter: the Redis limiter's rules in one process (each method atomic). */
export function createMemoryLoginLimiter (limits: LoginLimits, now: () => number = () => performance.now()): LoginLimiter {
  const accounts = new Map<string, AccountState>()
  const ips = new Map<string, IpState>()
  // One process: an attempt in flight cannot outlive it, so no expiry is needed here.
  const accountsBusy = new Map<string, number>()
  const ipsBusy = new Map<string, number>()

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
  const settle = (busy: Map<string, number>, key: string): void => {
    const n = busy.get(key) ?? 0
    if (n > 1) busy.set(key, n - 1)
    else busy.delete(key)
  }

  const verdict = (accountKey: string, clientIp: string): LimitVerdict => {
    const t = now()
    const a = account(accountKey, t)
    if (a !== undefined && a.lockedUntil > t) return { allowed: false, reason: 'account-locked', retryAfterMs: a.lockedUntil - t }
    const i = ip(clientIp, t)
    if ((i?.failures ?? 0) + (ipsBusy.get(clientIp) ?? 0) >= limits.maxFailuresPerIp) {
      return { allowed: false, reason: 'ip-limited', retryAfterMs: i === undefined ? BUSY_RETRY_MS : i.windowEnds - t }
    }
    if ((a?.failures ?? 0) + (accountsBusy.get(accountKey) ?? 0) >= limits.maxFailures) {
      return { allowed: false, reason: 'account-locked', retryAfterMs: BUSY_RETRY_MS }
    }
    return { allowed: true }
  }

  return {
    async begin (accountKey, clientIp) {
      const answer = verdict(accountKey, clientIp)
      if (answer.allowed) {
        accountsBusy.set(accountKey, (accountsBusy.get(accountKey) ?? 0) + 1)
        ipsBusy.set(clientIp, (ipsBusy.get(clientIp) ?? 0) + 1)
      }
      return answer
    },
    check: async (accountKey, clientIp) => verdict(accountKey, clientIp),
    async recordFailure (accountKey, clientIp) {
      settle(accountsBusy, accountKey)
      settle(ipsBusy, clientIp)
      const t = now()
      prune(t)
      let i = ip(clientIp, t)
      if (i === undefined) ips.set(clientIp, i = { failures: 0, windowEnds: t + limits.ipWindowMs })
      i.failures++
      let a = account(accountKey, t)
      if (a === undefined) accounts.set(accountKey, a = { failures: 0, level: 0, lockedUntil: 0, forgetAt: 0 })
      a.forgetAt = t + accountStateTtlMs(limits)
      a.failures++
      if (a.failures < limits.maxFailures) return { lockedForMs: 0 }
      const lockedForMs = lockDurationMs(limits, a.level)
      a.level++
      a.failures = 0
      a.lockedUntil = t + lockedForMs
      return { lockedForMs }
    },
    async recordSuccess (accountKey, clientIp) {
      settle(accountsBusy, accountKey)
      if (clientIp !== undefined) settle(ipsBusy, clientIp)
      accounts.delete(accountKey)
    },
    async release (accountKey, clientIp) {
      settle(accountsBusy, accountKey)
      settle(ipsBusy, clientIp)
    },
    async close () {
      accounts.clear()
      ips.clear()
      accountsBusy.clear()
      ipsBusy.clear()
    }
  }
}
