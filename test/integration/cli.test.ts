import t, { type Test } from 'tap'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import { buildApp } from '../../src/app/app.js'
import { loadConfig } from '../../src/config/config.js'
import { freshPostgresDatabase, TEST_DATABASE_URL } from '../../support/postgres.js'
import { tempDir } from '../../support/processes.js'
import { freshRedisPrefix, requireRedis } from '../../support/redis.js'
import { cliCommand, requireCurrentBuild } from '../../support/service.js'

/*
 * The command line as an operator meets it: the built binary (dist/cli/main.js, what the
 * package bin and the Docker image run) in a child process with an environment built
 * from scratch, against a fresh Postgres database and a Redis key prefix of its own.
 * The effect on tokens and logins is checked through the app itself, built in-process
 * on the same database and Redis prefix.
 */

// `npm test` builds first (pretest); running this file alone needs a build that is current.
requireCurrentBuild()

interface Run {
  args: string[]
  code: number | null
  stdout: string
  stderr: string
}

type Env = Record<string, string>

/** Every run of this file, for the check that no password is ever printed. */
const runs: Run[] = []

const PASSWORDS = {
  alice: 'Tr0ub&dor=3 +%2F "quoted" Ünïcode',
  aliceNew: 'n3w/pass#word ✓ with spaces',
  bob: 'b0b-federated-secret',
  embedded: 'embedded-default-secret',
  refused: 'refused-duplicate-secret',
  unused: 'never-stored-secret'
}

const USAGE_LINE = /usage: auth-token-service <command>/

/** A clean environment: only what the test names, never the test runner's own. */
function cleanEnv (extra: Env = {}): Env {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? tmpdir(), LOG_LEVEL: 'silent', ...extra }
}

/** Runs the built CLI; `stdin` is written and closed (an empty string: an empty stdin). */
async function cli (env: Env, args: string[], stdin = '', cwd = tmpdir()): Promise<Run> {
  return await new Promise((resolve, reject) => {
    const child = execFile(...cliCommand(args), { env, cwd, timeout: 60_000, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error !== null && typeof error.code !== 'number') {
        reject(new Error(`auth-token-service ${args.join(' ')} did not exit by itself (${error.signal ?? error.message}); stderr: ${stderr}`))
        return
      }
      const run = { args, code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr }
      runs.push(run)
      resolve(run)
    })
    // A process that exits before reading stdin must not fail the test with EPIPE.
    child.stdin?.on('error', () => {})
    child.stdin?.end(stdin)
  })
}

function noStackTrace (t: Test, run: Run): void {
  t.notMatch(run.stderr, /^\s+at /m, `no stack trace from ${run.args.join(' ')}`)
}

/** `user list` output as [username, federated|local, enabled|disabled] rows. */
function accounts (run: Run): string[][] {
  return run.stdout.split('\n').filter((line) => line !== '').map((line) => line.split('\t'))
}

async function login (app: FastifyInstance, username: string, password: string): Promise<{ status: number, token?: string }> {
  const response = await app.inject({ method: 'POST', url: '/auth/Login', payload: { username, password } })
  return response.json()
}

async function authenticate (app: FastifyInstance, token: string | undefined): Promise<number> {
  const response = await app.inject({ method: 'GET', url: `/auth/Authenticate?token=${encodeURIComponent(token ?? '')}` })
  return response.statusCode
}

t.test('accounts and sessions on Postgres and Redis', async (t) => {
  const redisUrl = await requireRedis()
  const backendEnv = {
    DATABASE_URL: await freshPostgresDatabase(t),
    REDIS_URL: redisUrl,
    AUTH_REDIS_KEY_PREFIX: await freshRedisPrefix(t)
  }
  const env = cleanEnv(backendEnv)
  let app: FastifyInstance | undefined
  t.teardown(async () => { await app?.close() })
  /** Alice's tokens that are still active, for `sessions revoke` to end. */
  const aliceTokens: Array<string | undefined> = []
  /** The app built after `migrate` (a real Postgres must be migrated before the service starts). */
  const service = (): FastifyInstance => {
    if (app === undefined) throw new Error('the service was not built: migrate failed')
    return app
  }

  t.test('before migrate, a command says to run it', async (t) => {
    const run = await cli(env, ['user', 'list'])
    t.equal(run.code, 1)
    t.match(run.stderr, /migrate/)
    t.equal(run.stdout, '')
  })

  t.test('migrate applies the migrations, then is up to date', async (t) => {
    const first = await cli(env, ['migrate'])
    t.equal(first.code, 0, first.stderr)
    t.match(first.stderr, /001-users\.sql/)
    const second = await cli(env, ['migrate'])
    t.equal(second.code, 0, second.stderr)
    t.match(second.stderr, /up to date/)

    // The service, in-process, on the same database and Redis prefix.
    app = await buildApp(loadConfig({ ...backendEnv, LOG_LEVEL: 'silent', NODE_ENV: 'test' }))
    await service().backends.tokens.ready()
  })

  t.test('user add takes the password from stdin; a duplicate is refused', async (t) => {
    const added = await cli(env, ['user', 'add', 'alice'], `${PASSWORDS.alice}\n`)
    t.equal(added.code, 0, added.stderr)
    t.match(added.stderr, /created account alice/)
    t.equal(added.stdout, '')

    const duplicate = await cli(env, ['user', 'add', 'alice'], `${PASSWORDS.refused}\n`)
    t.equal(duplicate.code, 1)
    t.match(duplicate.stderr, /taken/)
    t.equal(duplicate.stdout, '')

    const federated = await cli(env, ['user', 'add', 'bob', '--federated'], `${PASSWORDS.bob}\n`)
    t.equal(federated.code, 0, federated.stderr)
    t.match(federated.stderr, /created federated account bob/)
  })

  t.test('an empty stdin is a usage error and creates nothing', async (t) => {
    for (const stdin of ['', '\n']) {
      const run = await cli(env, ['user', 'add', 'carol'], stdin)
      t.equal(run.code, 2, JSON.stringify(stdin))
      t.match(run.stderr, /password is required/)
      t.match(run.stderr, /Run 'auth-token-service --help' for usage\./, 'and where the usage is')
    }
    t.notOk(accounts(await cli(env, ['user', 'list'])).some(([name]) => name === 'carol'))
  })

  t.test('user list: one account per line, with its flags', async (t) => {
    const run = await cli(env, ['user', 'list'])
    t.equal(run.code, 0, run.stderr)
    t.same(accounts(run), [['alice', 'local', 'enabled'], ['bob', 'federated', 'enabled']])
  })

  t.test('the password given on stdin logs in through the service', async (t) => {
    t.equal((await login(service(), 'alice', PASSWORDS.alice)).status, 0)
    t.equal((await login(service(), 'bob', PASSWORDS.bob)).status, 0)
    t.equal((await login(service(), 'alice', 'wrong')).status, 701)
  })

  t.test('user passwd sets the new password and ends the tokens', async (t) => {
    const { token } = await login(service(), 'alice', PASSWORDS.alice)
    t.equal(await authenticate(service(), token), 200)

    const run = await cli(env, ['user', 'passwd', 'alice'], `${PASSWORDS.aliceNew}\n`)
    t.equal(run.code, 0, run.stderr)
    t.match(run.stderr, /password changed for alice; [1-9]\d* active token\(s\) ended/)

    t.equal(await authenticate(service(), token), 403, 'the token from the old password is ended')
    t.equal((await login(service(), 'alice', PASSWORDS.alice)).status, 701, 'the old password fails')
    t.equal((await login(service(), 'alice', PASSWORDS.aliceNew)).status, 0, 'the new password logs in')
  })

  t.test('user disable ends the tokens and stops logins; enable lets them in again', async (t) => {
    const { token } = await login(service(), 'alice', PASSWORDS.aliceNew)
    t.equal(await authenticate(service(), token), 200)

    const disabled = await cli(env, ['user', 'disable', 'alice'])
    t.equal(disabled.code, 0, disabled.stderr)
    t.match(disabled.stderr, /alice disabled; [1-9]\d* active token\(s\) ended/)
    t.equal(await authenticate(service(), token), 403)
    t.equal((await login(service(), 'alice', PASSWORDS.aliceNew)).status, 701)
    t.same(accounts(await cli(env, ['user', 'list']))[0], ['alice', 'local', 'disabled'])

    const enabled = await cli(env, ['user', 'enable', 'alice'])
    t.equal(enabled.code, 0, enabled.stderr)
    const again = await login(service(), 'alice', PASSWORDS.aliceNew)
    t.equal(again.status, 0)
    aliceTokens.push(again.token)
    t.same(accounts(await cli(env, ['user', 'list']))[0], ['alice', 'local', 'enabled'])
  })

  t.test('a command that ends tokens changes nothing when Redis cannot be reached', async (t) => {
    const run = await cli(cleanEnv({ ...backendEnv, REDIS_URL: 'redis://127.0.0.1:1' }), ['user', 'disable', 'alice'])
    t.equal(run.code, 1)
    t.match(run.stderr, /Redis cannot be reached/)
    noStackTrace(t, run)
    t.same(accounts(await cli(env, ['user', 'list']))[0], ['alice', 'local', 'enabled'], 'alice is still enabled')
  })

  t.test('sessions revoke ends every token of the account and no other', async (t) => {
    const first = await login(service(), 'alice', PASSWORDS.aliceNew)
    const second = await login(service(), 'alice', PASSWORDS.aliceNew)
    const bobs = await login(service(), 'bob', PASSWORDS.bob)
    t.not(first.token, second.token)
    aliceTokens.push(first.token, second.token)
    for (const token of [...aliceTokens, bobs.token]) t.equal(await authenticate(service(), token), 200)

    const run = await cli(env, ['sessions', 'revoke', 'alice'])
    t.equal(run.code, 0, run.stderr)
    t.match(run.stderr, `${aliceTokens.length} active token(s) of alice ended`)
    for (const token of aliceTokens) t.equal(await authenticate(service(), token), 403, "alice's token is ended")
    t.equal(await authenticate(service(), bobs.token), 200, "bob's token is untouched")
  })

  t.test('sessions list, user unlock and user delete, with the database opened by the command', async (t) => {
    const { token } = await login(service(), 'alice', PASSWORDS.aliceNew)
    const list = await cli(env, ['sessions', 'list', 'alice'])
    t.equal(list.code, 0, list.stderr)
    const lines = accounts(list)
    t.equal(lines.length, 1, 'the one active session')
    t.equal(lines[0]?.length, 6, 'id, created, last refresh, IP, user agent, expiry')
    t.match(lines[0]?.[0], /^[A-Za-z0-9_-]{22}$/)
    t.notOk(list.stdout.includes(token ?? '-'), 'never the token')

    for (let i = 0; i < 10; i++) await login(service(), 'alice', 'a wrong password')
    t.equal((await login(service(), 'alice', PASSWORDS.aliceNew)).status, 429, 'locked by failed logins')
    const unlock = await cli(env, ['user', 'unlock', 'alice'])
    t.same([unlock.code, unlock.stderr], [0, 'alice unlocked\n'])
    t.equal((await login(service(), 'alice', PASSWORDS.aliceNew)).status, 0, 'the lock in Redis is gone')

    const bob = await login(service(), 'bob', PASSWORDS.bob)
    const removed = await cli(env, ['user', 'delete', 'bob'])
    t.equal(removed.code, 0, removed.stderr)
    t.match(removed.stderr, /^bob deleted; \d+ active token\(s\) ended\n$/)
    if (bob.token !== undefined) t.equal(await authenticate(service(), bob.token), 403, 'its tokens ended')
    t.notOk(accounts(await cli(env, ['user', 'list'])).some(([name]) => name === 'bob'), 'gone from the list')
    const events = accounts(await cli(env, ['events', '--user', 'bob']))
    t.same(events.at(-1)?.slice(1, 3), ['user.delete', 'bob'], 'its events stay, the deletion last')
    t.equal((await cli(env, ['user', 'delete', 'bob'])).code, 1, 'a second time: no such account')
  })

  t.test('an unknown user is a failure, exit 1', async (t) => {
    const runs = await Promise.all([
      cli(env, ['sessions', 'revoke', 'nobody']),
      cli(env, ['user', 'disable', 'nobody']),
      cli(env, ['user', 'enable', 'nobody']),
      cli(env, ['user', 'passwd', 'nobody'], `${PASSWORDS.unused}\n`)
    ])
    for (const run of runs) {
      t.equal(run.code, 1, run.args.join(' '))
      t.match(run.stderr, /no such account/)
      t.equal(run.stdout, '')
    }
  })
})

t.test('usage errors: exit 2, a few lines naming the problem and pointing at --help, nothing opened', async (t) => {
  // No DATABASE_URL: were a backend opened, the embedded database would appear in ./data.
  const cwd = await tempDir(t, 'ats-cli-usage-')
  const env = cleanEnv()
  const cases = [
    [],
    ['frobnicate'],
    ['user'],
    ['user', 'add'],
    ['user', 'add', 'a', 'b'],
    ['user', 'list', '--bogus'],
    ['user', 'add', 'bob', '--foo'],
    ['keys', 'create', 'svc', '--name'],
    ['user', 'passwd', 'alice', '--federated'],
    ['sessions', 'revoke'],
    ['migrate', 'extra']
  ]
  const results = await Promise.all(cases.map(async (args) => await cli(env, args, '', cwd)))
  for (const run of results) {
    const label = `[${run.args.join(' ')}]`
    t.equal(run.code, 2, `exit 2 for ${label}`)
    const lines = run.stderr.trimEnd().split('\n')
    t.ok(lines.length <= 3, `${lines.length} lines on stderr for ${label}`)
    t.match(lines[0], /^auth-token-service: \S/, `the problem first for ${label}`)
    t.equal(lines.at(-1), "Run 'auth-token-service --help' for usage.", `then where the usage is for ${label}`)
    t.notMatch(run.stderr, USAGE_LINE, `not the whole usage for ${label}`)
    t.equal(run.stdout, '', `nothing on stdout for ${label}`)
  }
  t.match(results.find((run) => run.args.includes('--foo'))?.stderr, /^auth-token-service: unknown option '--foo' for 'user add'\n/, 'an unknown option is named, with its command')
  t.same(await readdir(cwd), [], 'no embedded database was created')

  const help = await cli(env, ['--help'], '', cwd)
  t.equal(help.code, 0)
  t.match(help.stdout, USAGE_LINE, 'asked-for help goes to stdout')
  t.match(help.stdout, /^\s+user list\s/m, 'with the commands')
})

t.test('--version prints the package\'s version, and nothing is opened', async (t) => {
  const cwd = await tempDir(t, 'ats-cli-version-')
  const { version } = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
  const run = await cli(cleanEnv(), ['--version'], '', cwd)
  t.equal(run.code, 0)
  t.equal(run.stdout, `${version}\n`, 'the version alone on stdout, as scripts read it')
  t.equal(run.stderr, '')
  t.same(await readdir(cwd), [], 'no embedded database was created')
})

t.test('an unreachable database: exit 1, a message, no stack trace', async (t) => {
  const env = cleanEnv({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/x', REDIS_URL: await requireRedis(), AUTH_REDIS_KEY_PREFIX: await freshRedisPrefix(t) })
  const results = await Promise.all([
    cli(env, ['migrate']),
    cli(env, ['user', 'list']),
    cli(env, ['user', 'add', 'dave'], `${PASSWORDS.unused}\n`),
    cli(env, ['sessions', 'revoke', 'dave'])
  ])
  for (const run of results) {
    t.equal(run.code, 1, run.args.join(' '))
    t.match(run.stderr, /database.*cannot be reached/, run.args.join(' '))
    noStackTrace(t, run)
  }
})

t.test('bad configuration: exit 1 and one line naming the variable', async (t) => {
  const env = cleanEnv({ AUTH_TOKEN_TTL_SECONDS: 'abc' })
  const results = await Promise.all([cli(env, ['user', 'list']), cli(env, ['migrate']), cli(env, ['serve'])])
  for (const run of results) {
    t.equal(run.code, 1, run.args.join(' '))
    const lines = run.stderr.trimEnd().split('\n')
    t.equal(lines.length, 1, `one line from ${run.args.join(' ')}: ${run.stderr}`)
    t.match(lines[0], /AUTH_TOKEN_TTL_SECONDS/)
  }
})

t.test('the embedded default: no DATABASE_URL or REDIS_URL, PGlite files in AUTH_DATA_DIR', async (t) => {
  const dataDir = await tempDir(t, 'ats-cli-data-')
  const cwd = await tempDir(t, 'ats-cli-cwd-')
  const env = cleanEnv({ AUTH_DATA_DIR: dataDir })

  // Only serve and migrate make the database: an account command first is refused.
  const early = await cli(env, ['user', 'add', 'erin'], `${PASSWORDS.embedded}\n`, cwd)
  t.equal(early.code, 1, 'user add before there is a database: refused')
  t.match(early.stderr, `no database in ${dataDir}`)
  t.equal((await cli(env, ['migrate'], '', cwd)).code, 0)
  const added = await cli(env, ['user', 'add', 'erin'], `${PASSWORDS.embedded}\n`, cwd)
  t.equal(added.code, 0, added.stderr)
  const listed = await cli(env, ['user', 'list'], '', cwd)
  t.equal(listed.code, 0, listed.stderr)
  t.same(accounts(listed), [['erin', 'local', 'enabled']], 'the account outlived the process that made it')
  t.ok(existsSync(join(dataDir, 'PG_VERSION')), 'the PGlite files are in AUTH_DATA_DIR')
  t.same(await readdir(cwd), [], 'nothing under ./data')
})

t.test('the command line hashes at the configured argon2 policy (AUTH_ARGON2_*), as the service does', async (t) => {
  const databaseUrl = await freshPostgresDatabase(t)
  const env = cleanEnv({ DATABASE_URL: databaseUrl, AUTH_ARGON2_MEMORY_KIB: '20480', AUTH_ARGON2_TIME_COST: '3', AUTH_ARGON2_PARALLELISM: '2' })
  t.equal((await cli(env, ['migrate'])).code, 0)
  const added = await cli(env, ['user', 'add', 'frank'], `${PASSWORDS.unused}\n`)
  t.equal(added.code, 0, added.stderr)
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  t.teardown(async () => { await client.end() })
  const { rows } = await client.query<{ password_hash: string }>('SELECT password_hash FROM users WHERE username = $1', ['frank'])
  t.match(rows[0]?.password_hash, /^\$argon2id\$v=19\$m=20480,t=3,p=2\$/, 'the stored PHC string names the configured m, t and p')
})

t.test('migrate on a Postgres without the URL\'s database creates it, says so, then migrates it', async (t) => {
  const server = new URL(TEST_DATABASE_URL)
  const name = `ats_new_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL })
  await admin.connect()
  t.teardown(async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.end()
  })
  server.pathname = `/${name}`
  const env = cleanEnv({ DATABASE_URL: server.toString() })
  const first = await cli(env, ['migrate'])
  t.equal(first.code, 0, first.stderr)
  t.match(first.stderr, new RegExp(`^database "${name}" created on 127\\.0\\.0\\.1:5432\n`), 'one line says it was made, and where')
  t.match(first.stderr, /migrations applied: 001-users\.sql/, 'and migrated')
  const second = await cli(env, ['migrate'])
  t.equal(second.code, 0, second.stderr)
  t.notMatch(second.stderr, /created/, 'the second time: nothing made')
  t.match(second.stderr, /up to date/)
})

t.test('no password ever appears in any output', async (t) => {
  t.ok(runs.length > 20, `${runs.length} runs checked`)
  for (const run of runs) {
    const printed = Object.values(PASSWORDS).filter((password) => run.stdout.includes(password) || run.stderr.includes(password))
    t.same(printed, [], `[${run.args.join(' ')}] prints no password`)
  }
})
