import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { USAGE } from '../src/cli/parse.js'
import { WEBHOOK_EVENT_TYPES, WEBHOOK_OUTCOMES } from '../src/core/events.js'

/*
 * The docs say what the code does, by the code's own lists: the webhook catalogue's types and
 * outcomes (docs/webhooks.md) are WEBHOOK_EVENT_TYPES and WEBHOOK_OUTCOMES, which the code that
 * records them is type-checked against; the command-line table (docs/administration.md) and the
 * README's list of commands are the commands the CLI's usage text names. A doc that drifts
 * (an outcome renamed, a command added) fails here, naming what differs.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const page = async (path: string): Promise<string> => await readFile(join(ROOT, path), 'utf8')

/** The text of a `## heading` section, up to the next heading of that level or above. */
function section (markdown: string, heading: string): string {
  const start = markdown.indexOf(`\n## ${heading}\n`)
  if (start < 0) throw new Error(`no section "## ${heading}"`)
  const rest = markdown.slice(start + heading.length + 5)
  const end = rest.search(/^#{1,2} /m)
  return end < 0 ? rest : rest.slice(0, end)
}

/** A markdown table's rows (after its header and separator), as cells. */
function tableRows (text: string, header: RegExp): string[][] {
  const lines = text.split('\n')
  const at = lines.findIndex((line) => header.test(line))
  if (at < 0) throw new Error(`no table headed ${String(header)}`)
  const rows: string[][] = []
  for (const line of lines.slice(at + 2)) {
    if (!line.startsWith('|')) break
    rows.push(line.slice(1, -1).split(' | ').map((cell) => cell.trim()))
  }
  return rows
}

const codeSpans = (text: string): string[] => [...text.matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? '')

/** The commands the usage text names: its `commands:` lines, each up to its description. */
function usageCommands (): string[] {
  const block = USAGE.slice(USAGE.indexOf('commands:\n') + 'commands:\n'.length)
  const lines = block.slice(0, block.indexOf('\n\n')).split('\n')
  return lines.filter((line) => /^ {2}[a-z]/.test(line)).map((line) => line.trim().split(/ {2,}/)[0] ?? '')
}

t.test('docs/webhooks.md lists every webhook type, each with exactly the outcomes the code records', async (t) => {
  const rows = tableRows(section(await page('docs/webhooks.md'), 'Event catalogue'), /^\| type \| when \| `outcome`/)
  const documented = new Map(rows.map((cells) => [codeSpans(cells[0] ?? '')[0] ?? '', codeSpans(cells[2] ?? '')]))
  t.same([...documented.keys()], [...WEBHOOK_EVENT_TYPES], 'the types, in the contract\'s order')
  for (const type of WEBHOOK_EVENT_TYPES) {
    t.same(documented.get(type), [...WEBHOOK_OUTCOMES[type]], `${type}: the outcomes`)
  }
})

t.test('docs/webhooks.md\'s example bodies carry outcomes of their types', async (t) => {
  const text = section(await page('docs/webhooks.md'), 'Event catalogue')
  const examples = [...text.matchAll(/^\{"type":"([^"]+)".*"outcome":"([^"]*)"/gm)]
  t.ok(examples.length >= WEBHOOK_EVENT_TYPES.length, 'an example of each type')
  for (const [, type, outcome] of examples) {
    const patterns = WEBHOOK_OUTCOMES[type as keyof typeof WEBHOOK_OUTCOMES] as readonly string[] | undefined
    const matches = (patterns ?? []).some((pattern) =>
      new RegExp(`^${pattern.split(/<[^>]+>/).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.+')}$`).test(outcome ?? ''))
    t.ok(matches, `${String(type)}: "${String(outcome)}" is one of its outcomes`)
  }
})

t.test('docs/administration.md\'s command table is the usage text\'s commands', async (t) => {
  const rows = tableRows(section(await page('docs/administration.md'), 'Command line'), /^\| command \| does \|/)
  const documented = rows.flatMap((cells) => codeSpans(cells[0] ?? ''))
  const usage = usageCommands()
  t.ok(usage.length > 10, 'the usage text names the commands')
  t.same([...documented].sort(), [...usage].sort(), 'the same commands, with the same arguments and options')
})

t.test('the README names every command of the usage text (serve is npm start)', async (t) => {
  const text = section(await page('README.md'), 'Administration').replace(/\s+/g, ' ')
  const named = new Set<string>()
  for (const span of codeSpans(text)) {
    const [command, subs] = span.replace(/^npx auth-token-service /, '').split(' ')
    if (command === undefined) continue
    if (subs === undefined) named.add(command)
    else for (const sub of subs.split('|')) named.add(`${command} ${sub}`)
  }
  const usage = new Set(usageCommands().map((line) => {
    const words = line.split(' ')
    return /^[a-z-]+$/.test(words[1] ?? '') ? `${words[0]} ${words[1]}` : words[0] ?? ''
  }))
  usage.delete('serve')
  t.same([...usage].filter((command) => !named.has(command)), [], 'none missing')
})
