import t from 'tap'
import { spawn } from 'node:child_process'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { CLI, startService, tempDir, type ServiceProcess } from './helpers/throwaway-servers.js'

/*
 * The command line beside a running service on the embedded database, as an operator
 * meets it: `npm start` in one terminal (a real `serve` process on a PGlite data
 * directory), the CLI in another (real processes on the same directory). PGlite is one
 * process's database: a second process would work on a copy of its own and lose what it
 * wrote, so while the service runs every command that opens the database is refused,
 * with one line naming the service, and changes nothing; stopped, they all work; killed,
 * it does not block them.
 */

const ADMIN = { username: 'admin', password: 'first & only admin' }
const ALICE = { first: 'alice first secret', second: 'alice second secret' }

interface Run { args: string[], code: number | null, stdout: string, stderr: string }

async function cli (env: Record<string, string>, args: string[], stdin = ''): Promise<Run> {
  return await new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH, ...env }, stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
    const timer = setTimeout(() => { child.kill('SIGKILL') }, 60_000)
    child.once('error', reject)
    child.once('exit', (code) => {
      clearTimeout(timer)
      resolve({ args, code, stdout, stderr })
    })
    child.stdin.on('error', () => {})
    child.stdin.end(stdin)
  })
}

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

async function login (service: ServiceProcess, username: string, password: string): Promise<{ status: number, token?: string }> {
  const response = await fetch(`${service.baseUrl}/auth/Login`, { method: 'POST', body: new URLSearchParams({ username, password }) })
  return await response.json() as { status: number, token?: string }
}

async function authenticate (service: ServiceProcess, token: string | undefined): Promise<number> {
  return (await fetch(`${service.baseUrl}/auth/Authenticate?token=${encodeURIComponent(token ?? '')}`)).status
}

/** The lock's own files in the data directory. */
async function lockFiles (dataDir: string): Promise<string[]> {
  return (await readdir(dataDir)).filter((name) => name.startsWith('auth-token-service.')).sort()
}

function rows (run: Run): string[] {
  return run.stdout.split('\n').filter((line) => line !== '')
}

/** The audit events of account administration (logins left out), as [event, username]. */
function adminEvents (run: Run): string[][] {
  return rows(run).map((line) => line.split('\t').slice(1, 3)).filter(([event]) => /^(user|sessions)\./.test(event ?? ''))
}

t.test('the CLI and the service on one embedded data directory', async (t) => {
  const dataDir = join(await tempDir(t, 'ats-cli-embedded-'), 'data')
  const env = { AUTH_DATA_DIR: dataDir, LOG_LEVEL: 'warn' }
  const bootstrap = { AUTH_BOOTSTRAP_USERNAME: ADMIN.username, AUTH_BOOTSTRAP_PASSWORD: ADMIN.password }
  let service = await startService(t, { ...env, ...bootstrap })

  t.test('while the service runs, every command is refused with one line and exit 1', async (t) => {
    const { token } = await login(service, ADMIN.username, ADMIN.password)
    t.equal(await authenticate(service, token), 200)
    t.same(await lockFiles(dataDir), ['auth-token-service.lock', 'auth-token-service.owner.json'], 'the service holds the directory')

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
      const timer = setTimeout(() => { child.kill('SIGKILL') }, 60_000)
      child.once('exit', (code) => { clearTimeout(timer); resolve({ code, output }) })
    })
    t.equal(second.code, 1)
    t.equal(second.output.split('\n').length, 2, `one line: ${second.output}`)
    t.match(second.output, `is in use by the running service (pid ${service.pid}, listening on ${service.baseUrl}): stop it first, or give this one another AUTH_DATA_DIR`)
    t.equal((await login(service, ADMIN.username, ADMIN.password)).status, 0)
  })

  t.test('stopped: the directory is free, and nothing was changed', async (t) => {
    t.same(await service.stop('SIGTERM'), { code: 0, signal: null })
    t.same(await lockFiles(dataDir), [], 'the lock is gone with the service')
    const list = await cli(env, ['user', 'list'])
    t.equal(list.code, 0, list.stderr)
    t.same(rows(list), [`${ADMIN.username}\tlocal\tenabled`], 'no alice, the admin enabled')
    const events = await cli(env, ['events'])
    t.equal(events.code, 0, events.stderr)
    t.same(adminEvents(events), [['user.add', ADMIN.username]], 'the audit trail holds the bootstrap alone')
  })

  t.test('stopped: the same commands work, and the service sees what they did', async (t) => {
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
    }
    t.same(rows(await cli(env, ['user', 'list'])), [`${ADMIN.username}\tlocal\tenabled`, 'alice\tlocal\tenabled'])
    t.same(adminEvents(await cli(env, ['events'])).map(([event]) => event),
      ['user.add', 'user.add', 'user.passwd', 'user.disable', 'user.enable', 'sessions.revoke'])

    service = await startService(t, env)
    t.equal((await login(service, 'alice', ALICE.second)).status, 0, "alice logs in with the password the CLI gave her")
    t.equal((await login(service, 'alice', ALICE.first)).status, 701, 'not with the first one')
    t.equal((await login(service, ADMIN.username, ADMIN.password)).status, 0, "the admin's password was never changed")
  })

  t.test('a SIGKILLed service does not block the directory', async (t) => {
    t.same(await service.stop('SIGKILL'), { code: null, signal: 'SIGKILL' })
    t.same(await lockFiles(dataDir), ['auth-token-service.lock', 'auth-token-service.owner.json'], 'the dead service left its lock')
    const list = await cli(env, ['user', 'list'])
    t.equal(list.code, 0, `the CLI takes the directory over: ${list.stderr}`)
    t.equal(rows(list).length, 2)
    t.same(await lockFiles(dataDir), [], 'and gives it up when it is done')

    const killed = await startService(t, env)
    t.equal((await login(killed, 'alice', ALICE.second)).status, 0, 'a new service serves the same accounts')
    t.same(await killed.stop('SIGKILL'), { code: null, signal: 'SIGKILL' })
    const restarted = await startService(t, env)
    t.equal((await login(restarted, 'alice', ALICE.second)).status, 0, 'and so does one after another SIGKILL')
    t.same(await restarted.stop('SIGTERM'), { code: 0, signal: null })
  })
})
