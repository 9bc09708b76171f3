import { existsSync, readFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import t from 'tap'

/*
 * What another service imports. The guard and the client are the package
 * `@auth-token-service/guard` (packages/guard): its "exports" resolve to the built files (with
 * their .d.ts beside) for anyone without this repository's source condition, its tarball holds
 * nothing of the service, and its dependencies hold none of the service's. The service's own
 * `auth-token-service/guard` and `/client` remain, re-exporting it. Node resolves a package's
 * own name from inside it (and the workspace's link), so this runs here as in a dependent,
 * after the build that `npm test` runs first (pretest).
 */

const root = fileURLToPath(new URL('../../', import.meta.url))
const packageRoot = `${root}packages/guard/`

/** Resolves `specifier` as a dependent does: a Node without the repository's source condition. */
function resolveBuilt (specifier: string): string {
  return execFileSync(process.execPath, ['--input-type=module', '-e', `console.log(import.meta.resolve(${JSON.stringify(specifier)}))`], { cwd: root, encoding: 'utf8' }).trim()
}

const built = (file: string): string => {
  if (!existsSync(file)) throw new Error(`${file} is missing: run \`npm run build\` first (\`npm test\` does)`)
  return file
}

for (const [specifier, file, names] of [
  ['@auth-token-service/guard', `${packageRoot}dist/index.js`, ['authTokenGuard', 'redactUrl', 'KEY_LAYOUT_VERSION']],
  ['@auth-token-service/guard/client', `${packageRoot}dist/client/index.js`, ['createAuthClient']],
  ['@auth-token-service/guard/layout', `${packageRoot}dist/layout.js`, ['keyLayout', 'KEY_LAYOUT_VERSION', 'revocationChannel', 'decodeRecord']],
  ['auth-token-service/guard', `${root}dist/guard/index.js`, ['authTokenGuard', 'redactUrl']],
  ['auth-token-service/client', `${root}dist/client/index.js`, ['createAuthClient']]
] as const) {
  t.test(specifier, async (t) => {
    const resolved = resolveBuilt(specifier)
    t.equal(fileURLToPath(resolved), built(file), 'resolves by package name to the built file')
    t.ok(existsSync(file.replace(/\.js$/, '.d.ts')), 'with its type declarations')
    const loaded = await import(resolved) as Record<string, unknown>
    for (const name of names) t.not(loaded[name], undefined, `exports ${name}`)
  })
}

t.test('the service\'s guard is the package\'s, not a copy', async (t) => {
  // In a dependent's process (this one reads the package's source, by its condition).
  const same = execFileSync(process.execPath, ['--input-type=module', '-e',
    "const a = await import('auth-token-service/guard'); const b = await import('@auth-token-service/guard'); console.log(a.authTokenGuard === b.authTokenGuard)"
  ], { cwd: root, encoding: 'utf8' }).trim()
  t.equal(same, 'true')
})

t.test('the package holds nothing of the service', async (t) => {
  const manifest = JSON.parse(readFileSync(`${packageRoot}package.json`, 'utf8')) as {
    dependencies?: Record<string, string>
    peerDependencies?: Record<string, string>
    peerDependenciesMeta?: Record<string, { optional?: boolean }>
  }
  t.same(Object.keys(manifest.dependencies ?? {}), ['fastify-plugin'], 'one dependency: fastify-plugin')
  t.same(Object.keys(manifest.peerDependencies ?? {}).sort(), ['@opentelemetry/api', 'fastify', 'ioredis'])
  t.equal(manifest.peerDependenciesMeta?.ioredis?.optional, true, 'ioredis is an optional peer (direct mode only)')
  t.equal(manifest.peerDependenciesMeta?.['@opentelemetry/api']?.optional, true, '@opentelemetry/api is an optional peer')

  const listing = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '-w', 'packages/guard'], { cwd: root, encoding: 'utf8' })) as Array<{ files: Array<{ path: string }> }>
  const files = listing[0]?.files.map((file) => file.path) ?? []
  t.ok(files.includes('dist/index.js') && files.includes('dist/client/index.js') && files.includes('README.md'), 'the built guard, client and README')
  t.same(files.filter((path) => !/^(dist\/.+\.(js|d\.ts)|README\.md|package\.json)$/.test(path)), [], 'only dist, README and package.json')
  for (const path of files.filter((file) => file.endsWith('.js'))) {
    const text = readFileSync(`${packageRoot}${path}`, 'utf8')
    for (const [, from] of text.matchAll(/from '([^']+)'|import\('([^']+)'\)/g)) {
      if (from === undefined || from.startsWith('.') || from.startsWith('node:')) continue
      t.ok(['fastify-plugin', 'ioredis', '@opentelemetry/api'].includes(from), `${path} imports ${from}: a dependency or an optional peer`)
    }
  }
})
