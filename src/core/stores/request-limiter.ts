/**
 * A per-client limit on requests anyone may make before signing in (passkey options, a passkey's
 * answer, the code step; a password reset later): every request counts, success or not, in a fixed
 * window per client and scope. Unlike the login limiter (failures only) it protects the service's
 * own work and storage, not an account's secret.
 */

export interface RequestLimits {
  /** Requests one client may make per scope and window. */
  max: number
  windowMs: number
}

export type RequestVerdict =
  | { allowed: true }
  | { allowed: false, retryAfterMs: number }

export interface RequestLimiter {
  /**
   * Counts a request of `client` in `scope` (the route's name) and says whether it may go ahead.
   * A refused request counts nothing and writes nothing: a flood past the limit costs a read each.
   */
  hit (scope: string, client: string): Promise<RequestVerdict>
  close (): Promise<void>
}
