/**
 * RFC 9112 §3.2: a server must answer 400 to a request with more than one Host header (or a
 * Host with several values). Node keeps the first and drops the rest, so two parts of a
 * deployment (a proxy, the service) could each act on a different one; only the raw headers
 * still show both.
 */
export function hasSeveralHosts (rawHeaders: readonly string[]): boolean {
  let seen = false
  // Names at even indexes, values at odd ones.
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]
    if (name === undefined || name.length !== 4 || name.toLowerCase() !== 'host') continue
    if (seen || (rawHeaders[i + 1] ?? '').includes(',')) return true
    seen = true
  }
  return false
}
