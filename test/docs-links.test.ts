import { readFile, readdir, stat } from 'node:fs/promises'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

/*
 * The README is short and sends its reader to docs/: a link that leads nowhere,
 * or to a heading that was renamed, is a dead end for exactly that reader. Every relative link
 * and #anchor of the project's own pages must resolve. Anchors are made as GitHub makes them.
 * (That docs/configuration.md names every setting is test/config-docs.test.ts's: it is generated.)
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url))

async function pages (): Promise<string[]> {
  const docs = (await readdir(join(ROOT, 'docs'))).filter((name) => name.endsWith('.md')).map((name) => join('docs', name))
  return ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md', 'bench/README.md', 'examples/orders-service/README.md', 'packages/guard/README.md', 'packages/protocol/README.md', ...docs]
}

/** The text outside fenced code blocks and inline code spans: links inside them are not links. */
function prose (markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '')
}

/** GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors (markdown: string): Set<string> {
  const ids = new Set<string>()
  const seen = new Map<string, number>()
  const withoutCode = markdown.replace(/^```[\s\S]*?^```/gm, '')
  for (const [, heading] of withoutCode.matchAll(/^#{1,6} (.+)$/gm)) {
    const base = (heading ?? '').trim().toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replaceAll(' ', '-')
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    ids.add(count === 0 ? base : `${base}-${count}`)
  }
  return ids
}

async function exists (path: string): Promise<boolean> {
  try { await stat(path); return true } catch { return false }
}

t.test('every relative link and anchor of the project\'s pages resolves', async (t) => {
  const files = await pages()
  t.ok(files.length > 10, 'README, CONTRIBUTING, CHANGELOG and the docs pages are read')
  let checked = 0
  for (const file of files) {
    const text = await readFile(join(ROOT, file), 'utf8')
    for (const [, target] of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (target === undefined || /^[a-z]+:/i.test(target)) continue // http:, https:, mailto:
      const [path = '', anchor] = target.split('#')
      const resolved = path === '' ? join(ROOT, file) : join(ROOT, dirname(file), decodeURIComponent(path))
      checked++
      if (!await exists(resolved)) { t.fail(`${file}: ${target} names no file (${relative(ROOT, resolved)})`); continue }
      if (anchor === undefined) continue
      if (!resolved.endsWith('.md')) { t.fail(`${file}: ${target}: an anchor into a file that is not markdown`); continue }
      const ids = anchors(await readFile(resolved, 'utf8'))
      t.ok(ids.has(anchor), `${file}: ${target} names a heading of ${relative(ROOT, resolved)}`)
    }
  }
  t.ok(checked > 50, `links were found and checked (${checked})`)
})

t.test('the README stays a newcomer\'s page', async (t) => {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8')
  const lines = readme.split('\n').length - 1
  t.ok(lines <= 300, `README.md is at most 300 lines (${lines})`)
  const docs = (await readdir(join(ROOT, 'docs'))).filter((name) => name.endsWith('.md'))
  for (const name of docs) t.match(readme, `(docs/${name})`, `README links to docs/${name}`)
})
