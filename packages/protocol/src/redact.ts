import { escapeControlCharacters } from './log-escape.js'

// otp and code: a second factor's one-time code or recovery code, unused ones too when the password was wrong.
// rd: the sign-in page's way back is a whole URL, which may carry the protected app's own
// `?token=`, and gateways send it unencoded (`rd=https://app/p?token=…` holds no `&` before it).
const SECRET_KEYS = new Set(['password', 'token', 'authtoken', 'authtoken1', 'current_password', 'new_password', 'otp', 'code', 'rd'])

function decodedKey (raw: string): string {
  // Most names are plain: nothing to decode (decodeURIComponent was most of a query's redaction).
  if (!raw.includes('%') && !raw.includes('+')) return raw.toLowerCase()
  try {
    return decodeURIComponent(raw.replaceAll('+', ' ')).toLowerCase()
  } catch {
    return raw.toLowerCase()
  }
}

/**
 * A request URL as it may appear in a log. The path is never logged as sent (the
 * router decodes it before matching, so `/%61uth/Login/u/p` is a login too): a matched
 * route is logged by its template (`/auth/Login/:username/:password`), an unmatched
 * path by its first segment only. Query values of secret parameters, however their
 * names are encoded, are replaced; control characters are escaped.
 */
export function redactUrl (url: string, routeTemplate?: string): string {
  const q = url.indexOf('?')
  const rawPath = q < 0 ? url : url.slice(0, q)
  let path: string
  if (routeTemplate !== undefined) {
    path = routeTemplate
  } else {
    const second = rawPath.indexOf('/', 1)
    const first = second < 0 ? rawPath : rawPath.slice(0, second)
    // An encoded first segment may hide anything (`%2F` included): it is not logged either.
    path = first.includes('%') ? '/[redacted]' : second < 0 || second === rawPath.length - 1 ? rawPath : `${first}/[redacted]`
  }
  // A route template is ours, not the caller's: nothing in it to escape.
  if (q < 0) return routeTemplate === undefined ? escapeControlCharacters(path) : path
  // Piece by piece with indexOf, not split/map/join: no arrays or closure per logged request
  // (every access line redacts its URL; this halved the call for `?token=…` in a micro-benchmark).
  let redacted = `${path}?`
  for (let start = q + 1; ;) {
    let end = url.indexOf('&', start)
    if (end < 0) end = url.length
    const eq = url.indexOf('=', start)
    const key = url.slice(start, eq >= 0 && eq < end ? eq : end)
    redacted += SECRET_KEYS.has(decodedKey(key)) ? `${key}=[redacted]` : url.slice(start, end)
    if (end === url.length) break
    redacted += '&'
    start = end + 1
  }
  return escapeControlCharacters(redacted)
}
