import t from 'tap'
import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../../src/config/config.js'
import { StatusError } from '../../../src/errors/status.js'
import { blocklistSize, DEFAULT_PASSWORD_POLICY, passwordRefusal } from '../../../src/passwords/policy.js'
import { buildTestApp } from '../../support/app.js'
import { rejection } from '../../support/rejection.js'
import { cliCommand } from '../../../support/service.js'

/*
 * `printf 'a\n' | auth-token-service user add x` made an account with a
 * one-character password once. NIST SP 800-63B for every password the service sets.
 */

t.test('the rules, one by one', async (t) => {
  const refusal = async (password: string, username = 'alice', policy = DEFAULT_PASSWORD_POLICY) => await passwordRefusal(password, username, policy)
  t.equal(await refusal('a'), 'password is shorter than 8 characters')
  t.equal(await refusal('7 chars'), 'password is shorter than 8 characters')
  t.equal(await refusal('\u{1F600}'.repeat(7)), 'password is shorter than 8 characters', 'an emoji is one character, not two')
  t.equal(await refusal('\u{1F600}'.repeat(8)), undefined)
  t.equal(await refusal('x'.repeat(1025)), 'password is longer than 1024 bytes')
  t.equal(await refusal('é'.repeat(513)), 'password is longer than 1024 bytes', 'bytes, not characters')
  t.equal(await refusal('x'.repeat(1024)), undefined)
  for (const common of ['password', 'PASSWORD', 'Password', 'ｐａｓｓｗｏｒｄ', '12345678', 'iloveyou', 'sunshine', 'trustno1']) {
    t.equal(await refusal(common), 'password is on a list of common and breached passwords', JSON.stringify(common))
  }
  t.equal(await refusal('alice-in-wonderland'), 'password contains the username')
  t.equal(await refusal('My.ALICE.2024'), 'password contains the username', 'whatever its case')
  t.equal(await refusal('bo', 'bo'), 'password is shorter than 8 characters')
  t.equal(await refusal('bob rides at 9', 'bob'), undefined, 'a name under 4 characters is not looked for inside')
  t.equal(await refusal('bobbobbob', 'bobbobbob'), 'password contains the username', 'but equal to it is refused')
  t.equal(await refusal('correct horse battery staple'), undefined, 'no composition rules: a long passphrase of lowercase words is fine')
  t.equal(await refusal('fourteen chars', 'x', { minLength: 15, blocklist: true, refuseUsername: true }), 'password is shorter than 15 characters')
  t.ok(await blocklistSize() >= 10_000, `the offline list holds ${await blocklistSize()} passwords`)
})

t.test('AUTH_PASSWORD_MIN_LENGTH: 8 by default, 8 to 64', async (t) => {
  t.equal(loadConfig({}).passwordMinLength, 8)
  t.equal(loadConfig({ AUTH_PASSWORD_MIN_LENGTH: '15' }).passwordMinLength, 15)
  for (const bad of ['7', '65', 'x']) {
    let caught: unknown
    try { loadConfig({ AUTH_PASSWORD_MIN_LENGTH: bad }) } catch (error) { caught = error }
    t.match(caught, { variable: 'AUTH_PASSWORD_MIN_LENGTH' }, bad)
  }
})

t.test('the service sets no password the policy refuses; hashes stored before still log in', async (t) => {
  const { app, addUser } = await buildTestApp(t, 'embedded', { passwordMinLength: 15 })
  const refused = await rejection(app.accounts.add('x', 'a', false))
  t.ok(refused instanceof StatusError && refused.detail === 'password is shorter than 15 characters', 'user add')
  await app.accounts.add('carol', 'a long enough passphrase', false)
  const passwd = await rejection(app.accounts.setPassword('carol', 'carol is my name'))
  t.ok(passwd instanceof StatusError && passwd.detail === 'password contains the username', 'user passwd')
  t.equal((await rejection(app.accounts.add('dave', undefined, true))), undefined, 'a federated account with no password: the directory\'s policy')
  // An account made before the policy (a fixture here), with a one-character password.
  await addUser('old', 'a')
  const login = await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'old', password: 'a' } })
  t.equal(login.statusCode, 200, 'Login checks the hash, not the policy')
})

t.test('the command line and the bootstrap say why', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ats-policy-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  const run = async (args: string[], stdin: string, env: Record<string, string> = {}): Promise<{ code: number, stderr: string }> => await new Promise((resolve) => {
    const child = execFile(...cliCommand(args), { env: { PATH: process.env.PATH ?? '', AUTH_DATA_DIR: dir, LOG_LEVEL: 'silent', INTERNAL_PORT: '0', PORT: '0', ...env }, cwd: dir, encoding: 'utf8', timeout: 120_000 },
      (error, _stdout, stderr) => { resolve({ code: error === null ? 0 : Number(error.code), stderr }) })
    child.stdin?.end(stdin)
  })
  // Only serve and migrate make the embedded database.
  t.equal((await run(['migrate'], '')).code, 0)
  const weak = await run(['user', 'add', 'x'], 'a\n')
  t.equal(weak.code, 1)
  t.match(weak.stderr, /^auth-token-service: password is shorter than 8 characters\n$/)
  const common = await run(['user', 'add', 'x'], 'Password\n')
  t.match(common.stderr, /password is on a list of common and breached passwords/)
  t.equal((await run(['user', 'add', 'x'], 'a long enough passphrase\n')).code, 0)
  t.match((await run(['user', 'passwd', 'x'], 'short\n')).stderr, /password is shorter than 8 characters/)
  const bootstrap = await run(['serve'], '', { AUTH_BOOTSTRAP_USERNAME: 'admin', AUTH_BOOTSTRAP_PASSWORD: 'changeme' })
  t.equal(bootstrap.code, 1, 'the start stops')
  t.match(bootstrap.stderr, /AUTH_BOOTSTRAP_PASSWORD: password is on a list of common and breached passwords/)
})
