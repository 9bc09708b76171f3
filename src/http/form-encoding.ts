/**
 * Strict `application/x-www-form-urlencoded` parsing, for query strings and form
 * bodies alike. Unlike lenient parsers it refuses undecodable percent-encoding and
 * `__proto__` instead of guessing, and keeps a repeated key as an array so that
 * schema validation refuses it. The result has no prototype.
 */

export type FormParams = Record<string, string | string[]>

export class MalformedFormError extends Error {
  /** Undecodable percent-encoding, or a `__proto__` key. */
  readonly problem: 'percent-encoding' | 'proto'
  /** The (decoded) name whose value could not be decoded; absent when the name itself could not be. */
  readonly parameter: string | undefined
  constructor (problem: MalformedFormError['problem'], parameter?: string) {
    super('malformed form encoding')
    this.problem = problem
    this.parameter = parameter
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
      const key = interned(decode(text.slice(start, hasValue ? eq : end), undefined))
      const value = hasValue ? decode(text.slice(eq + 1, end), key) : ''
      if (key === '__proto__') throw new MalformedFormError('proto')
      const seen = params[key]
      if (seen === undefined) params[key] = value
      else if (typeof seen === 'string') params[key] = [seen, value]
      else seen.push(value)
    }
    start = end + 1
  }
  return params
}

/**
 * Parameter names, interned. A name sliced out of the text is a new string each time, and V8
 * stores a property of a prototype-less object under such a string through its runtime:
 * about 0.7 µs here, most of what parsing `token=…` cost. Under an interned string (a
 * property name, as Object.keys gives it) the store takes 0.05 µs. The first 256 distinct
 * names are kept (the service knows a dozen); any other is used as it comes.
 */
const NAMES = new Map<string, string>()
const MAX_NAMES = 256

function interned (name: string): string {
  const known = NAMES.get(name)
  if (known !== undefined) return known
  if (NAMES.size >= MAX_NAMES) return name
  const propertyName = Object.keys({ [name]: 0 })[0] ?? name
  NAMES.set(propertyName, propertyName)
  return propertyName
}

/** `text` percent-decoded; `key` names the parameter whose value it is (undefined for a name). */
function decode (text: string, key: string | undefined): string {
  const spaced = text.includes('+') ? text.replaceAll('+', ' ') : text
  if (!spaced.includes('%')) return spaced
  try {
    return decodeURIComponent(spaced)
  } catch {
    throw new MalformedFormError('percent-encoding', key)
  }
}
