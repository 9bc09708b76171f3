import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url))

interface Running {
  child: ChildProcess
  baseUrl: string
  output: () => string
}

/** Starts the built service as a new user would: no DATABASE_URL, no REDIS_URL, in an empty directory. */
async function startEmbedded (t: Test, cwd: string): Promise<Running> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` (npm test does it first)`)
  const child = spawn(process.execPath, [CLI, 'serve'], {
    cwd,
    env: {
      PATH: process.env.PATH,
      HOST: '127.0.0.1',
      PORT: '0',
      AUTH_BOOTSTRAP_USERNAME: 'admin',
      AUTH_BOOTSTRAP_PASSWORD: 'first run & secret'
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  const baseUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => { reject(new Error(`no listening line within 60 s:\n${output}`)) }, 60_000)
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

t.test('the embedded default boots from nothing and serves the bootstrap account', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ats-embedded-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })

  const first = await startEmbedded(t, dir)
  t.match(first.output(), /running on the embedded default/, 'says so in one log line')
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

  const second = await startEmbedded(t, dir)
  t.match(second.output(), /bootstrap account unchanged/, 'the account survived the restart')
  const again = await fetch(`${second.baseUrl}/auth/Authenticate/${token}`)
  t.equal(again.status, 403, 'in-process tokens end with the process')
  const relogin = await fetch(`${second.baseUrl}/auth/Login?username=admin&password=${encodeURIComponent('first run & secret')}`, { method: 'POST' })
  t.equal(relogin.status, 200)
  t.equal(await stop(second), 0)
})
