import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

/*
 * `npm test` runs the fast suite as the groups of test/suites/ (tap's `include`), each a process
 * that imports its test files: every test file that package.json's `tap.exclude` does not send
 * to the integration set must be in exactly one group, or it would silently not run.
 */

const root = fileURLToPath(new URL('..', import.meta.url))
const SUITES = 'test/suites'
const { tap } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { tap: { include: string[], exclude: string[] } }

/** A tap.exclude pattern (a path, or one with `*` for any characters but `/`) as a test. */
function matcher (pattern: string): (path: string) => boolean {
  const source = pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('[^/]*')
  const regex = new RegExp(`^${source}$`)
  return (path) => regex.test(path)
}

const excluded = tap.exclude.map(matcher)
const testFiles = (readdirSync(join(root, 'test'), { recursive: true }) as string[])
  .map((path) => `test/${path}`)
  .filter((path) => path.endsWith('.test.ts') && !path.startsWith(`${SUITES}/`))
const fast = testFiles.filter((path) => !excluded.some((isExcluded) => isExcluded(path))).sort()

/** Each group of test/suites/ and the test files it imports, as paths from the project's root. */
const groups = new Map<string, string[]>()
for (const name of readdirSync(join(root, SUITES)).filter((name) => name.endsWith('.test.ts')).sort()) {
  const group = `${SUITES}/${name}`
  const source = readFileSync(join(root, group), 'utf8')
  const imports = [...source.matchAll(/^import '([^']+)'$/gm)].map((match) => {
    const path = relative(root, join(root, dirname(group), match[1] ?? ''))
    return path.replace(/\.js$/, '.ts')
  })
  groups.set(group, imports)
}

t.same(tap.include, [`${SUITES}/*.test.ts`], `tap runs the groups of ${SUITES}/ and nothing else`)

t.test('every test file of the fast suite is in exactly one group', async (t) => {
  const where = new Map<string, string[]>()
  for (const [group, imports] of groups) {
    for (const path of imports) where.set(path, [...where.get(path) ?? [], group])
  }
  const missing = fast.filter((path) => !where.has(path))
  t.same(missing, [], `in no group of ${SUITES}/ (add each to the group of its part): ${missing.join(', ')}`)
  const twice = [...where].filter(([, inGroups]) => inGroups.length > 1).map(([path, inGroups]) => `${path} (${inGroups.join(', ')})`)
  t.same(twice, [], 'in more than one group')
})

t.test('the groups import only test files of the fast suite', async (t) => {
  const strays = [...groups].flatMap(([group, imports]) => imports.filter((path) => !fast.includes(path)).map((path) => `${group}: ${path}`))
  t.same(strays, [], 'an import that is no test file of the fast suite: missing, or in tap.exclude (the integration set)')
  t.ok(groups.size >= 3, `${groups.size} groups: enough for tap's jobs to run side by side`)
})
