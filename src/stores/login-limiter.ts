/**
 * Brute-force protection: failure counters per account (keyed on the normalized
 * username, whether or not the account exists) and per client IP. Only failures
 * count. An account that fails `maxFailures` times in a row is locked for
 * `lockoutMs`; each further lock doubles, up to `maxLockoutMs`; a success resets
 * it all. A client IP may fail `maxFailuresPerIp` times per window.
 */

export interface LoginLimits {
  maxFailures: number
  lockoutMs: number
  maxLockoutMs: number
  maxFailuresPerIp: number
  ipWindowMs: number
}

export type LimitVerdict =
  | { allowed: true }
  | { allowed: false, reason: 'account-locked' | 'ip-limited', retryAfterMs: number }

export interface FailureOutcome {
  /** Milliseconds of the lock this failure started; 0 when it started none. */
  lockedForMs: number
}

/**
 * An attempt is `begin`, then exactly one of `recordFailure`, `recordSuccess` or
 * `release`. Between them it holds a slot: attempts in flight count against the
 * limits, so guesses sent in parallel cannot outrun a lock (N failures allowed means
 * at most N guesses, however many arrive at once). A slot left open by a crashed
 * process frees itself after `inFlightTtlMs`.
 */
export interface LoginLimiter {
  /** Before any hashing: may this attempt go ahead? If so it holds a slot. A refused attempt changes nothing. */
  begin (accountKey: string, ip: string): Promise<LimitVerdict>
  /** What `begin` would answer, without taking a slot (for inspection). */
  check (accountKey: string, ip: string): Promise<LimitVerdict>
  /** Settles the attempt as a failure: counts it, and may start a lock. */
  recordFailure (accountKey: string, ip: string): Promise<FailureOutcome>
  /** Settles the attempt as a success: the account's failures, lock level and lock are reset. */
  recordSuccess (accountKey: string, ip?: string): Promise<void>
  /** Settles the attempt without counting it: the password could not be checked (a backend failed). */
  release (accountKey: string, ip: string): Promise<void>
  close (): Promise<void>
}

/** How long an attempt may hold its slot before it is presumed lost. */
export const IN_FLIGHT_TTL_MS = 30_000

/** When in-flight attempts alone fill the limit: retry once they have settled. */
export const BUSY_RETRY_MS = 1000

/** How long an account's failure history (its lock level) is kept after its last failure. */
export function accountStateTtlMs (limits: LoginLimits): number {
  return Math.max(24 * 60 * 60 * 1000, limits.maxLockoutMs * 2)
}

/** The length of the lock that the `level`-th lock (0-based) of an account gets. */
export function lockDurationMs (limits: LoginLimits, level: number): number {
  return Math.min(limits.lockoutMs * 2 ** level, limits.maxLockoutMs)
}
