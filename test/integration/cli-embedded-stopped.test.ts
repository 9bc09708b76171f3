import t from 'tap'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { adminEvents, ALICE, cli, LOCK_FILES, lockFiles, login, rows } from '../support/embedded-cli.js'
import { type ServiceProcess, startService } from '../../support/service.js'
import { tempDir } from '../../support/processes.js'
import { seedMigratedDataDir } from '../support/pglite-template.js'

/*
 * The command line on an embedded data directory whose service is stopped, or was
 * killed outright: every command works and the next service sees what it did; a lock
 * left by a SIGKILLed service blocks neither a new service nor the CLI.
 * (cli-embedded-running.test.ts: while the service runs, they are refused.)
 */

t.test('with the service stopped or killed', async (t) => {
  // Seeded with a migrated database: making one is not what this file tests (embedded.test.ts does).
  const dataDir = await seedMigratedDataDir(join(await tempDir(t, 'ats-cli-stopped-'), 'data'))
  const env = { AUTH_DATA_DIR: dataDir, LOG_LEVEL: 'warn' }
  let service: ServiceProcess | undefined

  t.test('every command works, and the service sees what they did', async (t) => {
    const steps: Array<[string[], string, RegExp]> = [
      [['user', 'add', 'alice'], `${ALICE.first}\n`, /^created account alice\n$/],
      [['user', 'passwd', 'alice'], `${ALICE.second}\n`, /^password changed for alice; 0 active token\(s\) ended\n$/],
      [['user', 'disable', 'alice'], '', /^alice disabled; 0 active token\(s\) ended\n$/],
      [['user', 'enable', 'alice'], '', /^alice enabled\n$/],
      [['sessions', 'revoke', 'alice'], '', /^0 active token\(s\) of alice ended\n$/],
      [['migrate'], '', /^migrations: up to date\n$/]
    ]
    // One after another: each holds the directory while it runs.
    for (const [args, stdin, said] of steps) {
      const run = await cli(env, args, stdin)
      t.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`)
      t.match(run.stderr, said, `${args.join(' ')} says what it did, and nothing else`)
      t.same(await lockFiles(dataDir), [], `${args.join(' ')} gave the directory up`)
    }
    t.same(rows(await cli(env, ['user', 'list'])), ['alice\tlocal\tenabled'])
    t.same(adminEvents(await cli(env, ['events'])),
      [['user.add', 'alice'], ['user.passwd', 'alice'], ['user.disable', 'alice'], ['user.enable', 'alice'], ['sessions.revoke', 'alice']])

    service = await startService(t, env)
    t.equal((await login(service, 'alice', ALICE.second)).status, 0, 'alice logs in with the password the CLI gave her')
    t.equal((await login(service, 'alice', ALICE.first)).status, 701, 'not with the first one')
  })

  t.test('a SIGKILLed service blocks neither a new service nor the CLI', async (t) => {
    if (service === undefined) throw new Error('no service: the previous test failed')
    t.same(await service.stop('SIGKILL'), { code: null, signal: 'SIGKILL' })
    t.same(await lockFiles(dataDir), LOCK_FILES, 'the dead service left its lock')
    const restarted = await startService(t, env)
    t.equal((await login(restarted, 'alice', ALICE.second)).status, 0, 'a new service takes the directory over and serves the same accounts')

    t.same(await restarted.stop('SIGKILL'), { code: null, signal: 'SIGKILL' })
    t.same(await lockFiles(dataDir), LOCK_FILES)
    const list = await cli(env, ['user', 'list'])
    t.equal(list.code, 0, `so does the CLI: ${list.stderr}`)
    t.same(rows(list), ['alice\tlocal\tenabled'])
    t.same(await lockFiles(dataDir), [], 'and gives it up when it is done')
  })

  t.test('--verbose says which database a command used', async (t) => {
    const list = await cli(env, ['user', 'list', '--verbose'])
    t.equal(list.code, 0, list.stderr)
    t.equal(list.stderr, `auth-token-service: using the embedded database in ${dataDir}\n`)
    t.same(rows(list), ['alice\tlocal\tenabled'], 'and does its work as without')
  })
})

t.test('where there is no database, an account command refuses and makes none', async (t) => {
  // What `npx --prefix <clone> auth-token-service user list` from another directory did: exit 0,
  // no output, and a new empty ./data there.
  const elsewhere = join(await tempDir(t, 'ats-cli-elsewhere-'), 'data')
  for (const args of [['user', 'list'], ['user', 'disable', 'alice'], ['events'], ['sessions', 'list', 'alice']]) {
    const run = await cli({ AUTH_DATA_DIR: elsewhere, LOG_LEVEL: 'warn' }, args)
    t.equal(run.code, 1, `${args.join(' ')}: exit 1`)
    t.equal(run.stderr, `auth-token-service: no database in ${elsewhere}: run the command in the directory the service runs in, or set AUTH_DATA_DIR (or DATABASE_URL); only serve and migrate create one\n`, 'one line naming the directory')
    t.notOk(existsSync(elsewhere), 'and no directory was made')
  }
  const migrate = await cli({ AUTH_DATA_DIR: elsewhere, LOG_LEVEL: 'warn' }, ['migrate'])
  t.equal(migrate.code, 0, 'migrate creates one, as it should')
  t.equal((await cli({ AUTH_DATA_DIR: elsewhere, LOG_LEVEL: 'warn' }, ['user', 'list'])).code, 0, 'then the commands work there')
})
