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

export type FailureOutcome =
  /** Counted; `lockedForMs` is the lock this failure started (0: none). */
  | { counted: true, lockedForMs: number }
  /** Not counted: the account was locked by failures recorded meanwhile. */
  | { counted: false, retryAfterMs: number }

/**
 * An attempt is `check` (before any hashing), then `recordFailure` or `recordSuccess`.
 * Only failures count. Settling re-reads the lock: an attempt whose account was locked
 * meanwhile, by failures recorded while it was being checked, is refused (429) whatever
 * its password, so guesses sent in parallel learn nothing past the N-th failure, while
 * any number of parallel correct logins succeed.
 */
export interface LoginLimiter {
  /** Before any hashing: may this attempt go ahead? Reads only: a refused attempt extends nothing. */
  check (accountKey: string, ip: string): Promise<LimitVerdict>
  /** Counts a failure and may start a lock; refused (not counted) when the account is already locked. */
  recordFailure (accountKey: string, ip: string): Promise<FailureOutcome>
  /** Resets the account's failures and lock level; refused when a lock started meanwhile (which stays). */
  recordSuccess (accountKey: string): Promise<LimitVerdict>
  /** The account's lock: its remaining milliseconds, 0 when it is not locked. Reads only. */
  lockedForMs (accountKey: string): Promise<number>
  /** An operator's unlock: the lock and the failure history (lock level) go, as after a success. */
  unlock (accountKey: string): Promise<void>
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
