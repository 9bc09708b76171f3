import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { ADMIN, ALICE, authenticate, cli, LOCK_FILES, lockFiles, login, rows, type Run } from '../support/embedded-cli.js'
import { cliCommand, startService, type ServiceProcess } from '../../support/service.js'
import { tempDir } from '../../support/processes.js'
import { seedMigratedDataDir } from '../support/pglite-template.js'

/*
 * The command line beside a running service on the embedded database, as an operator meets
 * it: `npm start` in one terminal (a real `serve` process on a PGlite data directory), the CLI
 * in another (real processes on the same directory). PGlite is one process's database, so the
 * CLI does not open it: the account and session commands go through the running service's
 * admin API, found from the data directory (the internal URL and a key the service generated,
 * in a file only its user reads). They take effect at once and survive a restart.
 * `migrate` and a second service are still refused with one line.
 * (cli-embedded-stopped.test.ts: with the service stopped or killed, the CLI opens the database.)
 */

const BOB = 'bob has a passphrase'

async function loginWithAgent (service: ServiceProcess, username: string, password: string, userAgent: string): Promise<{ status: number, token?: string }> {
  const response = await fetch(`${service.baseUrl}/auth/Login`, { method: 'POST', headers: { 'user-agent': userAgent }, body: new URLSearchParams({ username, password }) })
  return await response.json() as { status: number, token?: string }
}

function succeeded (t: Test, run: Run, said: RegExp): void {
  const name = run.args.join(' ')
  t.equal(run.code, 0, `${name}: exit 0 (${run.stderr.trim()})`)
  t.match(run.stderr, said, `${name}: says what it did`)
}

t.test('while the service runs on an embedded data directory', async (t) => {
  // Seeded with a migrated database: making one is not what this file tests (embedded.test.ts does).
  const dataDir = await seedMigratedDataDir(join(await tempDir(t, 'ats-cli-running-'), 'data'))
  const env = { AUTH_DATA_DIR: dataDir, LOG_LEVEL: 'warn' }
  const serviceEnv = { ...env, AUTH_BOOTSTRAP_USERNAME: ADMIN.username, AUTH_BOOTSTRAP_PASSWORD: ADMIN.password }
  let service = await startService(t, serviceEnv)

  t.test('the service leaves the local CLI its admin access, for its own user only', async (t) => {
    t.same(await lockFiles(dataDir), LOCK_FILES, 'the lock, its record and the admin access')
    t.equal((await stat(join(dataDir, 'auth-token-service.admin.json'))).mode & 0o777, 0o600, 'mode 0600')
  })

  t.test('account commands go through the running service and take effect at once', async (t) => {
    const started = Date.now()
    const add = await cli(env, ['user', 'add', 'alice'], `${ALICE.first}\n`)
    succeeded(t, add, /^created account alice\n$/)
    t.comment(`user add beside the service: ${Date.now() - started} ms`)
    const first = await loginWithAgent(service, 'alice', ALICE.first, 'curl/8\tx')
    t.equal(first.status, 0, 'alice logs in at once, no restart')
    succeeded(t, await cli(env, ['user', 'add', 'bob'], `${BOB}\n`), /^created account bob\n$/)

    const list = await cli(env, ['user', 'list'])
    t.equal(list.code, 0, list.stderr)
    t.same(rows(list), [`${ADMIN.username}\tlocal\tenabled`, 'alice\tlocal\tenabled', 'bob\tlocal\tenabled'])

    const sessions = await cli(env, ['sessions', 'list', 'alice'])
    t.equal(sessions.code, 0, sessions.stderr)
    const [session] = rows(sessions)
    t.equal(rows(sessions).length, 1, 'one session')
    const cells = session?.split('\t') ?? []
    t.equal(cells.length, 6, `id, created, last refresh, IP, user agent, expiry: ${session ?? ''}`)
    t.match(cells[0], /^[A-Za-z0-9_-]{22}$/, 'the session id')
    t.match(cells[1], /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/)
    t.equal(cells[2], '-', 'never refreshed')
    t.equal(cells[3], '127.0.0.1')
    t.equal(cells[4], 'curl/8\\u0009x', 'the user agent escaped: its tab forges no cell')
    t.notOk(sessions.stdout.includes(first.token ?? '-'), 'no token')

    succeeded(t, await cli(env, ['user', 'passwd', 'alice'], `${ALICE.second}\n`), /^password changed for alice; 1 active token\(s\) ended\n$/)
    t.equal(await authenticate(service, first.token), 403, 'her token ended at once')
    t.equal((await login(service, 'alice', ALICE.first)).status, 701)
    const second = await login(service, 'alice', ALICE.second)
    t.equal(second.status, 0, 'the new password works at once')

    succeeded(t, await cli(env, ['user', 'disable', 'alice'], ''), /^alice disabled; 1 active token\(s\) ended\n$/)
    t.equal(await authenticate(service, second.token), 403)
    t.equal((await login(service, 'alice', ALICE.second)).status, 701, 'disabled')
    succeeded(t, await cli(env, ['user', 'enable', 'alice'], ''), /^alice enabled\n$/)
    const third = await login(service, 'alice', ALICE.second)
    t.equal(third.status, 0)
    succeeded(t, await cli(env, ['sessions', 'revoke', 'alice'], ''), /^1 active token\(s\) of alice ended\n$/)
    t.equal(await authenticate(service, third.token), 403)

    for (let i = 0; i < 10; i++) await login(service, 'bob', 'wrong password')
    t.equal((await login(service, 'bob', BOB)).status, 429, 'bob locked by failed logins')
    succeeded(t, await cli(env, ['user', 'unlock', 'bob'], ''), /^bob unlocked\n$/)
    const bob = await login(service, 'bob', BOB)
    t.equal(bob.status, 0, 'unlocked in the running service')
    succeeded(t, await cli(env, ['user', 'delete', 'bob'], ''), /^bob deleted; 1 active token\(s\) ended\n$/)
    t.equal(await authenticate(service, bob.token), 403)

    const refused = await cli(env, ['user', 'add', 'alice'], 'a long enough passphrase\n')
    t.equal(refused.code, 1)
    t.equal(refused.stderr, 'auth-token-service: username is taken\n', 'the API\'s detail, one line')
    const unknown = await cli(env, ['user', 'disable', 'nobody'], '')
    t.same([unknown.code, unknown.stderr], [1, 'auth-token-service: no such account\n'])
    const weak = await cli(env, ['user', 'passwd', 'alice'], 'short\n')
    t.same([weak.code, weak.stderr], [1, 'auth-token-service: password is shorter than 8 characters\n'])

    const events = await cli(env, ['events', '--user', 'bob'])
    t.equal(events.code, 0, events.stderr)
    const kinds = rows(events).map((line) => line.split('\t')[1])
    t.same(kinds.filter((kind) => kind?.startsWith('user.')), ['user.add', 'user.unlock', 'user.delete'], 'bob\'s administration, in order')
    t.ok(rows(events).filter((line) => line.split('\t')[1]?.startsWith('user.')).every((line) => /\t127\.0\.0\.1\tauth-token-service-admin-client\/[^\t]+$/.test(line)), 'made through the admin API, from this host, by its client')
    t.notOk(events.stdout.includes(BOB), 'no password in the trail')
  })

  t.test('migrate and a second service are still refused with one line', async (t) => {
    const run = await cli(env, ['migrate'])
    t.equal(run.code, 1)
    t.equal(run.stderr.split('\n').length, 2, `one line: ${run.stderr}`)
    t.match(run.stderr, `is in use by the running service (pid ${service.pid}, listening on ${service.baseUrl}): stop it first`)
    const second = await new Promise<{ code: number | null, output: string }>((resolve) => {
      const child = spawn(...cliCommand(['serve']), {
        env: { PATH: process.env.PATH, ...env, HOST: '127.0.0.1', PORT: '0', INTERNAL_PORT: '0' },
        stdio: ['ignore', 'pipe', 'pipe']
      })
      let output = ''
      child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
      child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
      const timer = setTimeout(() => { child.kill('SIGKILL') }, 120_000)
      child.once('exit', (code) => { clearTimeout(timer); resolve({ code, output }) })
    })
    t.equal(second.code, 1)
    t.equal(second.output.split('\n').length, 2, `one line: ${second.output}`)
    t.match(second.output, `is in use by the running service (pid ${service.pid}, listening on ${service.baseUrl}): stop it first, or give this one another AUTH_DATA_DIR`)
    t.equal((await login(service, ADMIN.username, ADMIN.password)).status, 0)
  })

  t.test('AUTH_ADMIN_URL with a wrong key: the API\'s refusal, exit 1, nothing done', async (t) => {
    const owner = JSON.parse(await (await import('node:fs/promises')).readFile(join(dataDir, 'auth-token-service.owner.json'), 'utf8')) as { internalUrl: string }
    const run = await cli({ ...env, AUTH_ADMIN_URL: owner.internalUrl, AUTH_ADMIN_KEY: 'w'.repeat(40) }, ['user', 'add', 'mallory'], 'a long enough passphrase\n')
    t.same([run.code, run.stderr], [1, 'auth-token-service: the admin key is not valid\n'])
    const noKey = await cli({ ...env, AUTH_ADMIN_URL: owner.internalUrl }, ['user', 'list'])
    t.equal(noKey.code, 1)
    t.match(noKey.stderr, /AUTH_ADMIN_URL is set without AUTH_ADMIN_KEY/)
    t.equal((await login(service, 'mallory', 'a long enough passphrase')).status, 701)
  })

  t.test('a restart keeps what the CLI did; a clean stop removes the admin access', async (t) => {
    t.same(await service.stop('SIGTERM'), { code: 0, signal: null })
    t.same(await lockFiles(dataDir), [], 'lock, record and admin access gone with the service')
    service = await startService(t, serviceEnv)
    t.equal((await login(service, 'alice', ALICE.second)).status, 0, 'alice, with the password the CLI set, after the restart')
    t.equal((await login(service, 'bob', BOB)).status, 701, 'bob stays deleted')
    const list = await cli(env, ['user', 'list'])
    t.same(rows(list), [`${ADMIN.username}\tlocal\tenabled`, 'alice\tlocal\tenabled'], 'the restarted service answers the CLI with its new key')
    t.same(await service.stop('SIGTERM'), { code: 0, signal: null })
  })
})
