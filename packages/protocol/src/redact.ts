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
  const query = url.slice(q + 1).split('&').map((piece) => {
    const eq = piece.indexOf('=')
    const key = eq < 0 ? piece : piece.slice(0, eq)
    return SECRET_KEYS.has(decodedKey(key)) ? `${key}=[redacted]` : piece
  }).join('&')
  return escapeControlCharacters(`${path}?${query}`)
}
