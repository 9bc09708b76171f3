import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { cliCommand } from '../../support/service.js'

interface Running {
  child: ChildProcess
  baseUrl: string
  output: () => string
}

const BOOTSTRAP = { username: 'admin', password: 'first run & secret' }
/** The password the operator gives the admin later, with the command line. */
const CHANGED = 'changed by the operator'

/** Starts the built service as a new user would: no DATABASE_URL, no REDIS_URL, in an empty directory. */
async function startEmbedded (t: Test, cwd: string, env: Record<string, string> = {}): Promise<Running> {
  const child = spawn(...cliCommand(['serve']), {
    cwd,
    env: {
      PATH: process.env.PATH,
      INTERNAL_PORT: '0',
      HOST: '127.0.0.1',
      PORT: '0',
      AUTH_BOOTSTRAP_USERNAME: BOOTSTRAP.username,
      AUTH_BOOTSTRAP_PASSWORD: BOOTSTRAP.password,
      ...env
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  const baseUrl = await new Promise<string>((resolve, reject) => {
    // The first start runs initdb in WebAssembly: over 60 s on this 2-core VM when other suites load it.
    const timer = setTimeout(() => { reject(new Error(`no listening line within 120 s:\n${output}`)) }, 120_000)
    const look = (): void => {
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      if (match?.[1] !== undefined) { clearTimeout(timer); resolve(match[1]) }
    }
    child.stdout?.on('data', look)
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`exited with ${code}:\n${output}`)) })
  })
  return { child, baseUrl, output: () => output }
}

async function stop (running: Running): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => running.child.once('exit', resolve))
  running.child.kill('SIGTERM')
  return await exited
}

/** The built CLI in `cwd` (so on its ./data), password on stdin; resolves with its exit code and stderr. */
async function cli (cwd: string, args: string[], stdin: string): Promise<{ code: number, stderr: string }> {
  return await new Promise((resolve) => {
    const child = execFile(...cliCommand(args), { cwd, env: { PATH: process.env.PATH }, timeout: 60_000 }, (error, _stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stderr })
    })
    child.stdin?.end(stdin)
  })
}

async function loginStatus (running: Running, password: string): Promise<number> {
  const response = await fetch(`${running.baseUrl}/auth/Login`, { method: 'POST', body: new URLSearchParams({ username: BOOTSTRAP.username, password }) })
  await response.arrayBuffer()
  return response.status
}

t.test('the embedded default boots from nothing; its bootstrap account is created once, kept across restarts, reset when asked', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ats-embedded-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })

  const first = await startEmbedded(t, dir)
  t.match(first.output(), /running on the embedded default/, 'says so in one log line')
  t.match(first.output(), /"msg":"bootstrap account created"/)
  t.notMatch(first.output(), /first run & secret/, 'the bootstrap password is not logged')

  const login = await fetch(`${first.baseUrl}/auth/Login`, {
    method: 'POST',
    body: new URLSearchParams({ username: 'admin', password: 'first run & secret' })
  })
  t.equal(login.status, 200)
  const { token } = await login.json() as { token: string }
  t.match(login.headers.get('set-cookie'), /^AuthToken1=/)
  const auth = await fetch(`${first.baseUrl}/auth/Authenticate/${token}`)
  t.match(await auth.json(), { status: 0, message: 'Success', expiration_date: String, username: 'admin', federated: false })
  t.notMatch(first.output(), new RegExp(token), 'the token is not logged')
  t.equal(await stop(first), 0, 'SIGTERM ends it cleanly')
  t.ok(existsSync(join(dir, 'data')), 'the users live under ./data')

  // The operator changes the admin's password with the service stopped (as a running one refuses the CLI).
  const passwd = await cli(dir, ['user', 'passwd', BOOTSTRAP.username], `${CHANGED}\n`)
  t.equal(passwd.code, 0, passwd.stderr)

  const second = await startEmbedded(t, dir)
  t.match(second.output(), /"msg":"bootstrap account exists, left as it is/, 'the restart says it left the account alone')
  const again = await fetch(`${second.baseUrl}/auth/Authenticate/${token}`)
  t.equal(again.status, 403, 'in-process tokens end with the process')
  t.equal(await loginStatus(second, CHANGED), 200, 'the password changed since still works')
  t.equal(await loginStatus(second, BOOTSTRAP.password), 401, 'the bootstrap password did not come back')
  t.equal(await stop(second), 0)

  const reset = await startEmbedded(t, dir, { AUTH_BOOTSTRAP_RESET: 'true' })
  t.match(reset.output(), /"msg":"bootstrap account password reset \(AUTH_BOOTSTRAP_RESET=true\)/, 'asked to, it resets the password and says so')
  t.equal(await loginStatus(reset, BOOTSTRAP.password), 200, 'the bootstrap password works again')
  t.equal(await loginStatus(reset, CHANGED), 401, 'the changed one no longer does')
  for (const secret of [BOOTSTRAP.password, CHANGED]) t.notMatch(reset.output() + second.output(), secret, 'no password in the log')
  t.equal(await stop(reset), 0)
})
