import t from 'tap'
import { chmod, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ConfigError, loadConfig } from '../../src/config/config.js'
import { tempDir } from '../../support/processes.js'

const KEY = 'k'.repeat(40)

function refusal (env: Record<string, string>): ConfigError | undefined {
  try {
    loadConfig(env)
    return undefined
  } catch (error) {
    return error instanceof ConfigError ? error : undefined
  }
}

t.test('the admin key: unset by default, from AUTH_ADMIN_KEY or a file (trimmed)', async (t) => {
  t.equal(loadConfig({}).adminKey, undefined, 'off by default')
  t.equal(loadConfig({ AUTH_ADMIN_KEY: ` ${KEY} ` }).adminKey, KEY)
  const dir = await tempDir(t, 'ats-admin-key-')
  const file = join(dir, 'admin-key')
  await writeFile(file, `${KEY}\n`)
  t.equal(loadConfig({ AUTH_ADMIN_KEY_FILE: file }).adminKey, KEY, 'the file\'s contents, the newline trimmed')
  t.equal(loadConfig({ AUTH_ADMIN_URL: 'http://127.0.0.1:3001' }).adminUrl, 'http://127.0.0.1:3001')
})

t.test('a bad admin key setting stops the start with one line naming the variable, and never the key', async (t) => {
  const dir = await tempDir(t, 'ats-admin-key-')
  const missing = refusal({ AUTH_ADMIN_KEY_FILE: join(dir, 'absent') })
  t.match(missing?.message, /^AUTH_ADMIN_KEY_FILE: cannot be read: .*absent \(ENOENT\)$/)
  const empty = join(dir, 'empty')
  await writeFile(empty, '\n')
  t.match(refusal({ AUTH_ADMIN_KEY_FILE: empty })?.message, /AUTH_ADMIN_KEY_FILE: .*is empty/)
  const short = join(dir, 'short')
  await writeFile(short, 'secret-but-short')
  const tooShort = refusal({ AUTH_ADMIN_KEY_FILE: short })
  t.match(tooShort?.message, /AUTH_ADMIN_KEY_FILE: the key must be at least 32 characters/)
  t.notMatch(tooShort?.message, /secret-but-short/, 'the key is not echoed')
  t.match(refusal({ AUTH_ADMIN_KEY: 'short' })?.message, /AUTH_ADMIN_KEY: the key must be at least 32/)
  t.match(refusal({ AUTH_ADMIN_KEY: KEY, AUTH_ADMIN_KEY_FILE: short })?.message, /AUTH_ADMIN_KEY_FILE: is set together with AUTH_ADMIN_KEY/)
  if (process.getuid?.() !== 0) {
    const unreadable = join(dir, 'unreadable')
    await writeFile(unreadable, KEY)
    await chmod(unreadable, 0o000)
    t.match(refusal({ AUTH_ADMIN_KEY_FILE: unreadable })?.message, /cannot be read: .*\(EACCES\)/)
  }
  t.match(refusal({ AUTH_ADMIN_URL: 'ftp://x' })?.message, /AUTH_ADMIN_URL/)
})
