import { existsSync, readFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'

/*
 * What another service imports. The guard and the client are the package
 * `@auth-token-service/guard` (packages/guard), and the wire contract that it and the service
 * share is `@auth-token-service/protocol` (packages/protocol): their "exports" resolve to the
 * built files (with their .d.ts beside) for anyone without this repository's source condition,
 * name each entry point (no pattern that would publish every module), their tarballs hold
 * nothing of the service, and their dependencies hold none of the service's. The service's own
 * `auth-token-service/guard` and `/client` remain, re-exporting the guard. Node resolves a
 * package's own name from inside it (and the workspace's link), so this runs here as in a
 * dependent, after the build that `npm test` runs first (pretest).
 */

const root = fileURLToPath(new URL('../../', import.meta.url))
const packageRoot = `${root}packages/guard/`
const protocolRoot = `${root}packages/protocol/`

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
  ['@auth-token-service/protocol/layout', `${protocolRoot}dist/layout.js`, ['keyLayout', 'KEY_LAYOUT_VERSION', 'revocationChannel', 'decodeRecord']],
  ['@auth-token-service/protocol/token', `${protocolRoot}dist/token.js`, ['hashToken', 'isTokenShaped', 'TOKEN_COOKIE', 'hashApiKey']],
  ['@auth-token-service/protocol/token-source', `${protocolRoot}dist/token-source.js`, ['presentedToken', 'cookieToken', 'TokenRefusal']],
  ['@auth-token-service/protocol/redact', `${protocolRoot}dist/redact.js`, ['redactUrl']],
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

interface Manifest {
  exports?: Record<string, unknown>
  dependencies?: Record<string, string>
  peerDependencies?: Record<string, string>
  peerDependenciesMeta?: Record<string, { optional?: boolean }>
}

const manifestOf = (dir: string): Manifest => JSON.parse(readFileSync(`${dir}package.json`, 'utf8')) as Manifest

/** The tarball `npm pack` would make of the workspace: only dist, README and package.json, importing only `allowed` beyond itself. */
function checkTarball (t: Test, dir: string, workspace: string, allowed: readonly string[]): string[] {
  const listing = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '-w', workspace], { cwd: root, encoding: 'utf8' })) as Array<{ files: Array<{ path: string }> }>
  const files = listing[0]?.files.map((file) => file.path) ?? []
  t.same(files.filter((path) => !/^(dist\/.+\.(js|d\.ts)|README\.md|package\.json)$/.test(path)), [], 'only dist, README and package.json')
  for (const path of files.filter((file) => file.endsWith('.js'))) {
    const text = readFileSync(`${dir}${path}`, 'utf8')
    for (const [, from, dynamic] of text.matchAll(/from '([^']+)'|import\('([^']+)'\)/g)) {
      const specifier = from ?? dynamic
      if (specifier === undefined || specifier.startsWith('.') || specifier.startsWith('node:')) continue
      t.ok(allowed.some((name) => specifier === name || specifier.startsWith(`${name}/`)), `${path} imports ${specifier}: a dependency or an optional peer`)
    }
  }
  return files
}

t.test('each package names its entry points', async (t) => {
  for (const [name, dir] of [['guard', packageRoot], ['protocol', protocolRoot]] as const) {
    const entries = Object.keys(manifestOf(dir).exports ?? {})
    t.same(entries.filter((entry) => entry.includes('*')), [], `${name}: no pattern in "exports"`)
  }
  t.same(Object.keys(manifestOf(packageRoot).exports ?? {}), ['.', './client', './package.json'], 'the guard: the plugin and the client')
  // Every entry of the protocol resolves to its built module, for the guard's dist imports them by name.
  for (const entry of Object.keys(manifestOf(protocolRoot).exports ?? {}).filter((key) => key !== './package.json')) {
    const file = `${protocolRoot}dist/${entry.slice(2)}.js`
    t.equal(fileURLToPath(resolveBuilt(`@auth-token-service/protocol/${entry.slice(2)}`)), built(file), `protocol ${entry}`)
  }
})

t.test('the guard holds nothing of the service', async (t) => {
  const manifest = manifestOf(packageRoot)
  t.same(Object.keys(manifest.dependencies ?? {}), ['@auth-token-service/protocol', 'fastify-plugin'], 'the wire contract and fastify-plugin')
  t.same(Object.keys(manifest.peerDependencies ?? {}).sort(), ['@opentelemetry/api', 'fastify', 'ioredis'])
  t.equal(manifest.peerDependenciesMeta?.ioredis?.optional, true, 'ioredis is an optional peer (direct mode only)')
  t.equal(manifest.peerDependenciesMeta?.['@opentelemetry/api']?.optional, true, '@opentelemetry/api is an optional peer')
  const files = checkTarball(t, packageRoot, 'packages/guard', ['@auth-token-service/protocol', 'fastify-plugin', 'ioredis', '@opentelemetry/api'])
  t.ok(files.includes('dist/index.js') && files.includes('dist/client/index.js') && files.includes('README.md'), 'the built guard, client and README')
})

t.test('the protocol holds nothing of the service, nor of the guard', async (t) => {
  const manifest = manifestOf(protocolRoot)
  t.same(Object.keys(manifest.dependencies ?? {}), [], 'no dependency')
  t.same(Object.keys(manifest.peerDependencies ?? {}), ['ioredis'], 'ioredis, for the types of its Redis helpers')
  t.equal(manifest.peerDependenciesMeta?.ioredis?.optional, true, 'an optional peer')
  const files = checkTarball(t, protocolRoot, 'packages/protocol', [])
  t.ok(files.includes('dist/layout.js') && files.includes('dist/token.js') && files.includes('README.md'), 'the built contract and README')
})
