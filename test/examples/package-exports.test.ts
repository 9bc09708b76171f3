import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import t from 'tap'

/*
 * What another service imports: `auth-token-service/guard` and `auth-token-service/client`
 * resolve through the package's "exports" to the built files (with their .d.ts beside).
 * Node resolves a package's own name from inside it, so this runs here as it would in a
 * dependent. It needs the build that `npm test` runs first (pretest).
 */

const root = fileURLToPath(new URL('../../', import.meta.url))

for (const [subpath, names] of [['guard', ['authTokenGuard', 'redactUrl']], ['client', ['createAuthClient']]] as const) {
  t.test(`auth-token-service/${subpath}`, async (t) => {
    const file = `${root}dist/${subpath}/index.js`
    if (!existsSync(file)) throw new Error(`${file} is missing: run \`npm run build\` first (\`npm test\` does)`)
    const resolved = import.meta.resolve(`auth-token-service/${subpath}`)
    t.equal(fileURLToPath(resolved), file, 'resolves by package name to the built file')
    t.ok(existsSync(`${root}dist/${subpath}/index.d.ts`), 'with its type declarations')
    const loaded = await import(resolved) as Record<string, unknown>
    for (const name of names) t.type(loaded[name], 'function', `exports ${name}`)
  })
}
