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
  // Pieces found with indexOf rather than split: no array per call (a form body is parsed per request).
  let start = 0
  while (start <= text.length) {
    let end = text.indexOf('&', start)
    if (end < 0) end = text.length
    if (end > start) {
      const eq = text.indexOf('=', start)
      const hasValue = eq >= 0 && eq < end
      const key = decode(text.slice(start, hasValue ? eq : end))
      const value = hasValue ? decode(text.slice(eq + 1, end)) : ''
      if (key === '__proto__') throw new MalformedFormError()
      const seen = params[key]
      if (seen === undefined) params[key] = value
      else if (typeof seen === 'string') params[key] = [seen, value]
      else seen.push(value)
    }
    start = end + 1
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
