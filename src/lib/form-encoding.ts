/**
 * Strict `application/x-www-form-urlencoded` parsing, for query strings and form
 * bodies alike. Unlike lenient parsers it refuses undecodable percent-encoding and
 * `__proto__` instead of guessing, and keeps a repeated key as an array so that
 * schema validation refuses it. The result has no prototype.
 */

export type FormParams = Record<string, string | string[]>

export class MalformedFormError extends Error {
  constructor () {
    super('malformed form encoding')
    this.name = 'MalformedFormError'
  }
}

export function parseFormEncoded (text: string): FormParams {
  const params: FormParams = Object.create(null) as FormParams
  if (text.length === 0) return params
  for (const piece of text.split('&')) {
    if (piece.length === 0) continue
    const eq = piece.indexOf('=')
    const key = decode(eq < 0 ? piece : piece.slice(0, eq))
    const value = eq < 0 ? '' : decode(piece.slice(eq + 1))
    if (key === '__proto__') throw new MalformedFormError()
    const seen = params[key]
    if (seen === undefined) params[key] = value
    else if (typeof seen === 'string') params[key] = [seen, value]
    else seen.push(value)
  }
  return params
}

function decode (text: string): string {
  const spaced = text.includes('+') ? text.replaceAll('+', ' ') : text
  if (!spaced.includes('%')) return spaced
  try {
    return decodeURIComponent(spaced)
  } catch {
    throw new MalformedFormError()
  }
}
