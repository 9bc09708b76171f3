/**
 * The instant a token stops working, truncated to the whole second that
 * `expiration_date` names: a client reading the date never sees the token
 * outlive it.
 */
export function expiryInstant (nowMs: number, ttlSeconds: number): number {
  return Math.floor((nowMs + ttlSeconds * 1000) / 1000) * 1000
}

/** `YYYY-MM-DDTHH:MM:SS`, UTC, no zone designator, no fraction (spec §2). */
export function formatExpirationDate (epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 19)
}
