import { performance } from 'node:perf_hooks'
import type { RequestLimiter, RequestLimits, RequestVerdict } from '../request-limiter.js'
import { ExpiringEntries } from './expiring-entries.js'

/**
 * Clients counted at once in-process. A client's count lives one window; past this many clients
 * in a window the oldest count is forgotten (that client starts a new window): a bound on memory
 * (about 100 bytes a client) that only a flood from 100,000 addresses a minute reaches, and which
 * then costs that flood its limit, never a legitimate client its answer.
 */
export const MEMORY_LIMITED_CLIENTS = 100_000

/** The embedded default's request limiter: the Redis limiter's rules in one process. */
export function createMemoryRequestLimiter (limits: RequestLimits, now: () => number = () => performance.now(), capacity = MEMORY_LIMITED_CLIENTS): RequestLimiter {
  // Every count lives one window from its first request: they expire in the order they began.
  const counts = new ExpiringEntries<{ requests: number, windowEnds: number }>(capacity)
  return {
    async hit (scope, client): Promise<RequestVerdict> {
      const t = now()
      const key = `${scope}\n${client}`
      const count = counts.get(key, t)
      if (count === undefined) {
        counts.set(key, { requests: 1, windowEnds: t + limits.windowMs }, t + limits.windowMs, t)
        return { allowed: true }
      }
      if (count.requests >= limits.max) return { allowed: false, retryAfterMs: count.windowEnds - t }
      count.requests++
      return { allowed: true }
    },
    async close () { counts.clear() }
  }
}
