import type { TObject, TSchema } from 'typebox'
import { FALSE_WORDS, keywords, literals, otherMember, TRUE_WORDS, type Keywords } from './variables.js'

/*
 * The settings' tables of the docs, written from the declarations (parts/*.ts) so that the page
 * and the checks cannot disagree. A page holds a region per table, between
 *   <!-- settings: PART … -->   (a part's $id, or `all`: every part, each under its heading)
 *   <!-- end of settings -->
 * and everything outside the regions is the page's own prose. `npm run docs:config` writes the
 * regions (write-docs.ts); test/config-docs.test.ts fails when a committed page differs.
 */

export const REGENERATE = 'npm run docs:config'

const REGION = /(<!-- settings: ([a-z-]+)[^\n]*-->\n)[\s\S]*?(<!-- end of settings -->)/g

const code = (value: unknown): string => `\`${String(value)}\``
const cell = (text: string): string => text.replaceAll('|', '\\|')

/** The units a variable's name gives its number in, largest first: [size, unit, fewest of it worth saying]. */
const UNITS: Array<[RegExp, Array<[number, string, number]>]> = [
  [/_SECONDS$/, [[86400, 'd', 2], [3600, 'h', 1], [60, 'min', 1]]],
  [/_MS$/, [[3_600_000, 'h', 1], [60_000, 'min', 1], [1000, 's', 1]]],
  [/_BYTES$/, [[1024 ** 3, 'GiB', 1], [1024 ** 2, 'MiB', 1], [1024, 'KiB', 1]]],
  [/_KIB$/, [[1024 ** 2, 'GiB', 1], [1024, 'MiB', 1]]]
]

/** A round number in its unit: 43200 seconds is 12 h. */
function inUnits (name: string, value: number): string {
  const steps = UNITS.find(([suffix]) => suffix.test(name))?.[1] ?? []
  const step = steps.find(([size, , fewest]) => value >= size * fewest && value % size === 0)
  return step === undefined ? '' : ` (${value / step[0]} ${step[1]})`
}

function defaultCell (name: string, schema: Keywords): string {
  if (typeof schema.docDefault === 'string') return schema.docDefault
  const value = schema.default
  if (schema.writeOnly === true || value === undefined || (Array.isArray(value) && value.length === 0)) return 'unset'
  return `${code(value)}${typeof value === 'number' ? inUnits(name, value) : ''}`
}

/** What a value may be, in words: from the declaration's keywords. */
function valuesOf (name: string, schema: Keywords): string {
  const options = literals(schema)
  if (options.length > 0) {
    const other = otherMember(schema)
    const either = schema.caseInsensitive === true ? ' (either case)' : ''
    return other === undefined ? `${options.map(code).join(', ')}${either}` : `${options.map(code).join(', ')}${either} or ${valuesOf(name, other)}`
  }
  switch (schema.type) {
    case 'integer': {
      const min = Number(schema.minimum)
      const max = Number(schema.maximum)
      return `${min}${inUnits(name, min)} to ${max}${inUnits(name, max)}`
    }
    case 'boolean': return 'boolean'
    case 'array': {
      const items = (schema.items ?? {}) as Keywords
      const each = typeof schema.expected === 'string' ? schema.expected : valuesOf(name, items)
      return `comma-separated: ${each}${schema.uniqueItems === true ? ', each once' : ''}`
    }
    default: {
      const secret = schema.writeOnly === true ? '; a secret, never logged' : ''
      if (typeof schema.expected === 'string') return `${schema.expected}${secret}`
      if (Array.isArray(schema.protocols)) return `a URL: ${schema.protocols.map((p) => code(`${String(p)}//`)).join(' or ')}${secret}`
      if (typeof schema.minLength === 'number') {
        return `at least ${schema.minLength} characters${typeof schema.hint === 'string' ? ` (${code(schema.hint)})` : ''}${secret}`
      }
      return `text${secret}`
    }
  }
}

/** One part's table: a row per variable, in the order the part declares them. */
export function settingsTable (part: TObject): string {
  const rows = Object.entries(part.properties).map(([name, variable]: [string, TSchema]) => {
    const schema = keywords(variable)
    return `| ${code(name)} | ${cell(defaultCell(name, schema))} | ${cell(valuesOf(name, schema))} | ${cell(String(schema.description))} |`
  })
  return ['| variable | default | values | meaning |', '|---|---|---|---|', ...rows].join('\n')
}

/** Every part under its own heading, after a word on how values are written. */
export function allSettings (parts: readonly TObject[]): string {
  const spelling = `A value is trimmed, and an empty one is unset. A boolean is ${TRUE_WORDS.map(code).join(', ')} or ${FALSE_WORDS.map(code).join(', ')}, ` +
    'in either case; a list is comma-separated. A secret (a key, a password) is never logged, nor repeated in an error.'
  const sections = parts.map((part) => {
    const heading = (part as { title?: unknown }).title
    const about = (part as { description?: unknown }).description
    return `## ${String(heading)}\n\n${String(about)}\n\n${settingsTable(part)}`
  })
  return [spelling, ...sections].join('\n\n')
}

/** The page with each of its settings regions written from the declarations; a region naming no part is an error. */
export function fillSettings (page: string, parts: readonly TObject[]): string {
  return page.replace(REGION, (_region, opening: string, name: string, closing: string) => {
    if (name === 'all') return `${opening}\n${allSettings(parts)}\n\n${closing}`
    const part = parts.find((candidate) => (candidate as { $id?: unknown }).$id === name)
    if (part === undefined) throw new Error(`a settings region names "${name}", which is no part of the configuration (src/config/parts/)`)
    return `${opening}\n${settingsTable(part)}\n\n${closing}`
  })
}

/** Whether the page holds any settings region. */
export const holdsSettings = (page: string): boolean => page.match(REGION) !== null
