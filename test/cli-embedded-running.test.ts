import t from 'tap'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { adminEvents, ADMIN, ALICE, authenticate, cli, LOCK_FILES, lockFiles, login, rows } from './support/embedded-cli.js'
import { CLI, startService } from '../support/service.js'
import { tempDir } from '../support/processes.js'
import { seedMigratedDataDir } from './support/pglite-template.js'

/*
 * The command line beside a running service on the embedded database, as an operator
 * meets it: `npm start` in one terminal (a real `serve` process on a PGlite data
 * directory), the CLI in another (real processes on the same directory). PGlite is one
 * process's database: a second process would work on a copy of its own and lose what it
 * wrote, so while the service runs every command that opens the database, and a second
 * service, is refused with one line naming the running one, and changes nothing.
 * (cli-embedded-stopped.test.ts: with the service stopped or killed, they work.)
 */

/** Every command that opens the database, with its stdin. */
const COMMANDS: Array<[string[], string]> = [
  [['user', 'add', 'alice'], `${ALICE.first}\n`],
  [['user', 'passwd', ADMIN.username], `${ALICE.second}\n`],
  [['user', 'disable', ADMIN.username], ''],
  [['user', 'enable', ADMIN.username], ''],
  [['sessions', 'revoke', ADMIN.username], ''],
  [['migrate'], ''],
  [['user', 'list'], ''],
  [['events'], '']
]

t.test('while the service runs on an embedded data directory', async (t) => {
  // Seeded with a migrated database: making one is not what this file tests (embedded.test.ts does).
  const dataDir = await seedMigratedDataDir(join(await tempDir(t, 'ats-cli-running-'), 'data'))
  const env = { AUTH_DATA_DIR: dataDir, LOG_LEVEL: 'warn' }
  const service = await startService(t, { ...env, AUTH_BOOTSTRAP_USERNAME: ADMIN.username, AUTH_BOOTSTRAP_PASSWORD: ADMIN.password })

  t.test('every command is refused with one line and exit 1', async (t) => {
    const { token } = await login(service, ADMIN.username, ADMIN.password)
    t.equal(await authenticate(service, token), 200)
    t.same(await lockFiles(dataDir), LOCK_FILES, 'the service holds the directory')

    const runs = await Promise.all(COMMANDS.map(async ([args, stdin]) => await cli(env, args, stdin)))
    for (const run of runs) {
      const name = run.args.join(' ')
      t.equal(run.code, 1, `${name}: exit 1`)
      t.equal(run.stdout, '', `${name}: nothing on stdout`)
      t.equal(run.stderr.split('\n').length, 2, `${name}: one line: ${run.stderr}`)
      t.match(run.stderr, `auth-token-service: the embedded database in ${dataDir} is in use by the running service (pid ${service.pid}, listening on ${service.baseUrl}): ` +
        'stop it first, then run this command again', `${name}: names the service and says what to do`)
      t.notMatch(run.stderr, /created|changed|disabled|enabled|ended|applied|up to date/, `${name}: claims nothing`)
    }

    t.equal((await login(service, 'alice', ALICE.first)).status, 701, 'no alice')
    t.equal((await login(service, ADMIN.username, ADMIN.password)).status, 0, "the admin's password is unchanged")
    t.equal(await authenticate(service, token), 200, 'the admin is enabled and its token alive')
  })

  t.test('a second service on the same directory is refused, and the first serves on', async (t) => {
    const second = await new Promise<{ code: number | null, output: string }>((resolve) => {
      const child = spawn(process.execPath, [CLI, 'serve'], {
        env: { PATH: process.env.PATH, ...env, HOST: '127.0.0.1', PORT: '0' },
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

  t.test('stopped afterwards: the directory is free, and nothing was changed', async (t) => {
    t.same(await service.stop('SIGTERM'), { code: 0, signal: null })
    t.same(await lockFiles(dataDir), [], 'the lock is gone with the service')
    const list = await cli(env, ['user', 'list'])
    t.equal(list.code, 0, list.stderr)
    t.same(rows(list), [`${ADMIN.username}\tlocal\tenabled`], 'no alice, the admin enabled')
    const events = await cli(env, ['events'])
    t.equal(events.code, 0, events.stderr)
    t.same(adminEvents(events), [['user.add', ADMIN.username]], 'no passwd, disable, enable or revoke: the bootstrap alone')
  })
})
