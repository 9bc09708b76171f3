import { escapeControlCharacters } from './text.js'

const SECRET_PATH = /^\/+auth\/+(?:Login|Authenticate|Logout)\/+/i
const SECRET_KEYS = new Set(['password', 'token', 'authtoken', 'authtoken1'])

function decodedKey (raw: string): string {
  try {
    return decodeURIComponent(raw.replaceAll('+', ' ')).toLowerCase()
  } catch {
    return raw.toLowerCase()
  }
}

/**
 * A request URL as it may appear in a log: everything after an operation's
 * path (legacy credentials, tokens) and the values of secret query parameters,
 * however their names are encoded, replaced; control characters escaped.
 */
export function redactUrl (url: string): string {
  const q = url.indexOf('?')
  let path = q < 0 ? url : url.slice(0, q)
  const match = SECRET_PATH.exec(path)
  if (match !== null && path.length > match[0].length) path = `${match[0]}[redacted]`
  if (q < 0) return escapeControlCharacters(path)
  const query = url.slice(q + 1).split('&').map((piece) => {
    const eq = piece.indexOf('=')
    const key = eq < 0 ? piece : piece.slice(0, eq)
    return SECRET_KEYS.has(decodedKey(key)) ? `${key}=[redacted]` : piece
  }).join('&')
  return escapeControlCharacters(`${path}?${query}`)
}
