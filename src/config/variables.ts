import { readFileSync } from 'node:fs'
import type { Static, TObject, TProperties, TSchema } from 'typebox'
import { ConfigError } from './config-error.js'

/**
 * The loader of the settings' schema: each part of the configuration declares its variables as
 * one TypeBox object (parts/*.ts), keyed by the variable's name, and reads them through
 * `variables()`. Defaults and bounds come from the declaration, so the page generated from it
 * (docs/configuration.md) and the checks cannot disagree.
 *
 * The JSON Schema keywords read here: type (integer, boolean, string, array), enum, anyOf (a
 * literal beside one other kind, e.g. `auto` or a number), default, minimum, maximum, pattern,
 * minLength, format 'uri', uniqueItems, items, writeOnly (a secret: never repeated in an error),
 * description. Beside them, annotations of this loader:
 * - `expected`: what a good value looks like, in words; the error says "expected …, got …"
 * - `caseInsensitive`: the value is lower-cased before it is checked
 * - `verbatim`: taken as given, spaces included (a password); only '' is unset
 * - `protocols`: the URL schemes a `format: 'uri'` value may have (it is parsed as a URL only then)
 * - `hint`: how to make a good value, added to a too-short value's error
 * - `docDefault`: the page's words for a default worked out at start, or for what unset means
 */

/** The environment as the loader reads it (process.env, or a test's object). */
export type Env = Readonly<Record<string, string | undefined>>

/** The keywords above, as the loader reads them from a declaration. */
export interface Keywords {
  type?: unknown
  enum?: unknown
  anyOf?: unknown
  const?: unknown
  default?: unknown
  minimum?: unknown
  maximum?: unknown
  pattern?: unknown
  minLength?: unknown
  format?: unknown
  uniqueItems?: unknown
  items?: unknown
  writeOnly?: unknown
  description?: unknown
  expected?: unknown
  caseInsensitive?: unknown
  verbatim?: unknown
  protocols?: unknown
  hint?: unknown
  docDefault?: unknown
}

export const keywords = (schema: TSchema): Keywords => schema as Keywords

/** The spellings a boolean setting takes, either case. */
export const TRUE_WORDS = ['true', '1', 'yes', 'on'] as const
export const FALSE_WORDS = ['false', '0', 'no', 'off'] as const

const isStrings = (value: unknown): value is string[] => Array.isArray(value) && value.every((entry) => typeof entry === 'string')

/** The literal strings of an enum, or of the `const` members of an anyOf. */
export function literals (schema: Keywords): string[] {
  if (isStrings(schema.enum)) return schema.enum
  if (!Array.isArray(schema.anyOf)) return []
  return (schema.anyOf as Keywords[]).flatMap((member) => typeof member.const === 'string' ? [member.const] : [])
}

/** The member of an anyOf that is not a literal (the number beside `auto`). */
export function otherMember (schema: Keywords): Keywords | undefined {
  return Array.isArray(schema.anyOf) ? (schema.anyOf as Keywords[]).find((member) => member.const === undefined) : undefined
}

const secret = (schema: Keywords): boolean => schema.writeOnly === true
/** A URL may carry a password: it is never repeated in an error either. */
const echoed = (schema: Keywords): boolean => !secret(schema) && schema.format !== 'uri'

/** The standard refusal: what was expected, and what was given unless it may be a secret. */
export function refusal (name: string, schema: Keywords, value: string): ConfigError {
  const expected = typeof schema.expected === 'string' ? schema.expected : `a value matching ${String(schema.pattern)}`
  return new ConfigError(name, echoed(schema) ? `expected ${expected}, got "${value}"` : `expected ${expected}`)
}

function integer (name: string, schema: Keywords, raw: string): number {
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `expected a whole number, got "${raw}"`)
  const value = Number(raw)
  const min = typeof schema.minimum === 'number' ? schema.minimum : 0
  const max = typeof schema.maximum === 'number' ? schema.maximum : Number.MAX_SAFE_INTEGER
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`)
  return value
}

function boolean (name: string, raw: string): boolean {
  const lower = raw.toLowerCase()
  if ((TRUE_WORDS as readonly string[]).includes(lower)) return true
  if ((FALSE_WORDS as readonly string[]).includes(lower)) return false
  throw new ConfigError(name, `expected true or false, got "${raw}"`)
}

/** A string value against its declaration: URL and scheme, pattern, length. Returns it as kept (lower-cased if declared so). */
export function checkText (name: string, schema: Keywords, raw: string): string {
  const value = schema.caseInsensitive === true ? raw.toLowerCase() : raw
  if (schema.format === 'uri' && isStrings(schema.protocols)) {
    let parsed: URL
    try {
      parsed = new URL(value)
    } catch {
      throw new ConfigError(name, 'is not a valid URL')
    }
    if (!schema.protocols.includes(parsed.protocol)) {
      throw new ConfigError(name, `must start with ${schema.protocols.map((p) => `${p}//`).join(' or ')}`)
    }
  }
  if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern).test(value)) throw refusal(name, schema, value)
  if (typeof schema.minLength === 'number' && value.length < schema.minLength) {
    const hint = typeof schema.hint === 'string' ? ` (${schema.hint})` : ''
    throw new ConfigError(name, `${secret(schema) ? 'the key' : 'the value'} must be at least ${schema.minLength} characters${hint}, got ${value.length}`)
  }
  return value
}

function one (name: string, schema: Keywords, raw: string): unknown {
  const options = literals(schema)
  if (options.length > 0) {
    const value = schema.caseInsensitive === true ? raw.toLowerCase() : raw
    if (options.includes(value)) return value
    const other = otherMember(schema)
    if (other !== undefined) return one(name, other, raw)
    const expected = typeof schema.expected === 'string' ? schema.expected : `one of ${options.join(', ')}`
    throw new ConfigError(name, `expected ${expected}, got "${value}"`)
  }
  switch (schema.type) {
    case 'integer': return integer(name, schema, raw)
    case 'boolean': return boolean(name, raw)
    case 'string': return checkText(name, schema, raw)
    default: throw new Error(`${name}: the settings' loader reads no ${String(schema.type)} (a declaration to fix)`)
  }
}

/** A comma-separated list: entries trimmed, empty ones dropped, each checked as its `items` declare. */
function list (name: string, schema: Keywords, raw: string): string[] {
  const items = (schema.items ?? {}) as Keywords
  const entries = raw.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '').map((entry) => checkText(name, items, entry))
  if (schema.uniqueItems === true && new Set(entries).size !== entries.length) {
    throw new ConfigError(name, `names one ${items.format === 'uri' ? 'URL' : 'entry'} twice`)
  }
  return entries
}

/** The value as given: trimmed, '' (or blanks) unset; a verbatim one keeps its spaces. */
function given (schema: Keywords, value: string | undefined): string | undefined {
  if (schema.verbatim === true) return value === '' ? undefined : value
  const trimmed = value?.trim()
  return trimmed === undefined || trimmed === '' ? undefined : trimmed
}

/** One variable of a part: its default when unset, else its value checked against its declaration. */
function readOne (name: string, schema: Keywords, value: string | undefined): unknown {
  const raw = given(schema, value)
  if (raw === undefined) return Array.isArray(schema.default) ? [...schema.default as unknown[]] : schema.default
  return schema.type === 'array' ? list(name, schema, raw) : one(name, schema, raw)
}

/** The values a part's declaration gives: a number for an integer, a union for an enum, `| undefined` for an optional variable. */
export type Values<T extends TProperties> = Static<TObject<T>>

export interface Variables<T extends TProperties> {
  /** The variable's value, or its default; a bad value throws the ConfigError naming it. Read on first use, as the part needs it. */
  read: <K extends keyof Values<T> & keyof T & string>(name: K) => Values<T>[K]
  /** Whether the environment gives the variable at all (a deprecated name's fallback asks). */
  given: (name: keyof T & string) => boolean
}

/** The variables of one part, read from `env` as its declaration says; a name the part does not declare does not compile. */
export function variables<T extends TProperties> (schema: TObject<T>, env: Env): Variables<T> {
  const declaration = (name: string): Keywords => keywords(schema.properties[name] as TSchema)
  return {
    read: (name) => readOne(name, declaration(name), env[name]) as Values<T>[typeof name],
    given: (name) => given(declaration(name), env[name]) !== undefined
  }
}

/** The text of a secret mounted as a file (a Docker or Kubernetes secret) that `name` points to, or the ConfigError saying why not. */
export function readSecretFile (name: string, file: string): string {
  try {
    return readFileSync(file, 'utf8')
  } catch (error) {
    const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : 'unreadable'
    throw new ConfigError(name, `cannot be read: ${file} (${code})`)
  }
}
