import t from 'tap'
import { randomBytes } from 'node:crypto'
import { mkdtemp, readFile, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../src/config/config.js'
import { loadOrCreateKeyFile } from '../../src/totp/key-file.js'
import { totpKeySource } from '../../src/totp/keys.js'
import { openSecret, sealSecret } from '../../src/totp/sealed-secret.js'

t.test('sealed with the account as associated data; a rotation opens old secrets and asks to seal them again', async (t) => {
  const old = randomBytes(32)
  const current = randomBytes(32)
  const secret = randomBytes(20)
  const sealed = sealSecret(old, secret, '42')
  t.notOk(sealed.includes(secret.toString('base64url')), 'not the secret in the clear')
  t.same(openSecret({ current: old, previous: [] }, sealed, '42'), { secret, stale: false })
  t.equal(openSecret({ current: old, previous: [] }, sealed, '43'), undefined, 'another account\'s row: does not open')
  t.equal(openSecret({ current, previous: [] }, sealed, '42'), undefined, 'a new key alone: does not open')
  t.same(openSecret({ current, previous: [old] }, sealed, '42'), { secret, stale: true }, 'with the previous key: opens, stale')
  const tampered = sealed.slice(0, -2) + (sealed.endsWith('A') ? 'BB' : 'AA')
  t.equal(openSecret({ current: old, previous: [] }, tampered, '42'), undefined, 'a changed byte: does not open')
})

t.test('the key file: made 0600 at first use, the same key after, named in the log once', async (t) => {
  const dir = join(await mkdtemp(join(tmpdir(), 'totp-key-')), 'data')
  const first = await loadOrCreateKeyFile(dir)
  t.equal(first.created, true)
  t.equal((await stat(first.path)).mode & 0o777, 0o600, 'mode 0600')
  t.equal((await stat(dir)).mode & 0o777, 0o700, 'its directory 0700')
  const second = await loadOrCreateKeyFile(dir)
  t.equal(second.created, false)
  t.same(second.key, first.key, 'the same key')
  t.equal(Buffer.from((await readFile(first.path, 'utf8')).trim(), 'base64').length, 32)
  const logged: string[] = []
  const source = totpKeySource({ totpKey: undefined, totpPreviousKeys: [], dataDir: join(dir, 'other') }, { info: (_o, message) => { logged.push(message) } })
  await source()
  await source()
  t.equal(logged.length, 1, 'the log says so once')
})

t.test('config: AUTH_TOTP_KEY is 32 bytes of base64, never echoed; one of it or its file', async (t) => {
  const key = randomBytes(32).toString('base64')
  t.same(loadConfig({ AUTH_TOTP_KEY: key }).totpKey, Buffer.from(key, 'base64'))
  t.throws(() => loadConfig({ AUTH_TOTP_KEY: 'c2hvcnQ=' }), /AUTH_TOTP_KEY: expected 32 bytes/)
  t.throws(() => loadConfig({ AUTH_TOTP_KEY: key, AUTH_TOTP_KEY_FILE: '/nonexistent' }), /AUTH_TOTP_KEY_FILE: is set together/)
  try {
    loadConfig({ AUTH_TOTP_KEY: 'notbase64!notbase64!' })
  } catch (error) {
    t.notOk(String(error).includes('notbase64'), 'the value is not in the message')
  }
  t.equal(loadConfig({}).idleTimeoutSeconds, undefined, 'idle timeout off by default')
  t.equal(loadConfig({ AUTH_IDLE_TIMEOUT_SECONDS: '900' }).idleTimeoutSeconds, 900)
  t.throws(() => loadConfig({ AUTH_IDLE_TIMEOUT_SECONDS: '0' }), /AUTH_IDLE_TIMEOUT_SECONDS/)
})
