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

export interface LoginLimiter {
  /** Before any hashing: may this attempt go ahead? Reads only, so a refused attempt extends nothing. */
  check (accountKey: string, ip: string): Promise<LimitVerdict>
  recordFailure (accountKey: string, ip: string): Promise<FailureOutcome>
  recordSuccess (accountKey: string): Promise<void>
  close (): Promise<void>
}

/** How long an account's failure history (its lock level) is kept after its last failure. */
export function accountStateTtlMs (limits: LoginLimits): number {
  return Math.max(24 * 60 * 60 * 1000, limits.maxLockoutMs * 2)
}

/** The length of the lock that the `level`-th lock (0-based) of an account gets. */
export function lockDurationMs (limits: LoginLimits, level: number): number {
  return Math.min(limits.lockoutMs * 2 ** level, limits.maxLockoutMs)
}
