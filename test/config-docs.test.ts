import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { loadConfig, SETTINGS_PARTS } from '../src/config/config.js'
import { fillSettings, holdsSettings, REGENERATE } from '../src/config/docs.js'
import { keywords } from '../src/config/variables.js'

/*
 * The settings are declared once (src/config/parts/); the docs' tables are written from that
 * declaration by `npm run docs:config`. A committed page that differs from what the generator
 * writes, or a variable the configuration reads without declaring it, fails here.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url))

const declared = SETTINGS_PARTS.flatMap((part) => Object.keys(part.properties))

t.test('the docs\' settings tables are what the declarations write', async (t) => {
  const names = (await readdir(join(ROOT, 'docs'))).filter((name) => name.endsWith('.md')).sort()
  const pages: string[] = []
  for (const name of names) {
    const page = await readFile(join(ROOT, 'docs', name), 'utf8')
    if (!holdsSettings(page)) continue
    pages.push(name)
    t.ok(fillSettings(page, SETTINGS_PARTS) === page, `docs/${name} is what ${REGENERATE} writes from src/config/parts/ (when not: run it, and commit the page)`)
  }
  t.ok(pages.includes('configuration.md'), 'docs/configuration.md holds the settings tables')
  const configuration = await readFile(join(ROOT, 'docs', 'configuration.md'), 'utf8')
  t.match(configuration, '<!-- settings: all', 'docs/configuration.md shows every part')
  for (const name of declared) t.match(configuration, `| \`${name}\` |`, `docs/configuration.md has a row for ${name}`)
})

t.test('the configuration reads only what it declares, and reads all of it', async (t) => {
  const read = new Set<string>()
  const watched = (env: Record<string, string>): Record<string, string | undefined> => new Proxy(env, {
    get (target, name) {
      if (typeof name === 'string') read.add(name)
      return target[name as string]
    }
  })
  // Unset, then with every part that reads more once on: the directory in search mode,
  // webhooks, Redis behind sentinels.
  loadConfig(watched({}))
  loadConfig(watched({
    AUTH_LDAP_URL: 'ldap://dir.example:389',
    AUTH_LDAP_BIND_DN: 'cn=reader,dc=example,dc=org',
    AUTH_LDAP_BIND_PASSWORD: 'reader-password',
    AUTH_LDAP_SEARCH_BASE: 'ou=people,dc=example,dc=org',
    AUTH_WEBHOOK_URL: 'https://hooks.example.org/auth',
    AUTH_WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
    REDIS_SENTINELS: 'sentinel:26379'
  }))
  t.same([...read].filter((name) => !declared.includes(name)), [], 'no variable is read without a declaration')
  t.same(declared.filter((name) => !read.has(name)), [], 'no variable is declared that the configuration never reads')
})

t.test('each declaration says what its variable is', async (t) => {
  t.equal(new Set(declared).size, declared.length, 'each variable is declared in one part only')
  for (const part of SETTINGS_PARTS) {
    const { $id, title, description } = part as { $id?: unknown, title?: unknown, description?: unknown }
    t.ok(typeof $id === 'string' && typeof title === 'string' && typeof description === 'string', `part ${String($id)}: an id, a title and a description`)
    for (const [name, variable] of Object.entries(part.properties)) {
      const schema = keywords(variable)
      t.ok(typeof schema.description === 'string' && schema.description !== '' && !schema.description.includes('\n'), `${name}: a one-line description`)
      if (schema.type === 'integer') t.ok(typeof schema.minimum === 'number' && typeof schema.maximum === 'number', `${name}: both bounds`)
      if ((part.required as string[] | undefined ?? []).includes(name)) t.not(schema.default, undefined, `${name}: required, so a default`)
    }
  }
})
