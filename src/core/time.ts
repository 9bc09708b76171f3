/**
 * The instant a token stops working, truncated to the whole second that
 * `expiration_date` names: a client reading the date never sees the token
 * outlive it.
 */
export function expiryInstant (nowMs: number, ttlSeconds: number): number {
  return Math.floor((nowMs + ttlSeconds * 1000) / 1000) * 1000
}

const DAY_SECONDS = 86_400
const TWO_DIGITS = Array.from({ length: 60 }, (_, n) => String(n).padStart(2, '0'))
/** `YYYY-MM-DDT` of the few days recent answers name (tokens end today or tomorrow). */
const dayPrefixes = new Map<number, string>()

/**
 * `YYYY-MM-DDTHH:MM:SS`, UTC, no zone designator, no fraction (spec §2): what
 * `new Date(epochMs).toISOString().slice(0, 19)` gives, without a Date and its ISO string
 * per answer (Authenticate formats one per request). The date part is computed once per day.
 */
export function formatExpirationDate (epochMs: number): string {
  const seconds = Math.floor(epochMs / 1000)
  const day = Math.floor(seconds / DAY_SECONDS)
  let prefix = dayPrefixes.get(day)
  if (prefix === undefined) {
    const iso = new Date(day * DAY_SECONDS * 1000).toISOString()
    // Years outside 0000-9999 are written ±YYYYYY: no cached shortcut for those.
    if (iso.length !== 24) return new Date(epochMs).toISOString().slice(0, 19)
    if (dayPrefixes.size >= 16) dayPrefixes.clear()
    prefix = iso.slice(0, 11)
    dayPrefixes.set(day, prefix)
  }
  const inDay = seconds - day * DAY_SECONDS
  const hours = Math.floor(inDay / 3600)
  const minutes = Math.floor(inDay / 60) % 60
  return `${prefix}${TWO_DIGITS[hours] as string}:${TWO_DIGITS[minutes] as string}:${TWO_DIGITS[inDay % 60] as string}`
}
