import { openSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { freePort, spawnTracked, stopChild, tempDir, waitFor } from '../../../support/processes.js'
import { holdLogin } from '../../support/held-request.js'

/*
 * `npm start` as a newcomer runs it: it serves, its log says where the docs page is,
 * and `kill -TERM <pid of npm start>` stops the server itself — not only npm, leaving the
 * node process running under PID 1 and holding ./data so that the next start is refused.
 * And Ctrl-C in the terminal: SIGINT to the whole process group, npm and the server alike,
 * and npm passes its own on to the server, which so gets it twice.
 */

const ROOT = fileURLToPath(new URL('../../..', import.meta.url))

interface Started { npmPid: number, nodePid: number, output: () => string, exited: Promise<number | null>, closed: Promise<void> }

const USERNAME = 'admin'
const PASSWORD = 'change me'

interface StartOptions {
  /** In a process group of its own, as a terminal starts a command: a group signal reaches npm and the server. */
  group?: boolean
  /** stdout and stderr into this file; default a pipe that this process reads (outside the group). */
  logFile?: string
}

async function npmStart (t: Test, dataDir: string, port: number, internalPort: number, options: StartOptions = {}): Promise<Started> {
  const logFd = options.logFile === undefined ? undefined : openSync(options.logFile, 'w')
  const child = spawnTracked('npm', ['start', '--silent'], {
    cwd: ROOT,
    detached: options.group === true,
    stdio: logFd === undefined ? ['ignore', 'pipe', 'pipe'] : ['ignore', logFd, logFd],
    env: {
      ...process.env,
      AUTH_DATA_DIR: dataDir,
      PORT: String(port),
      INTERNAL_PORT: String(internalPort),
      HOST: '127.0.0.1',
      DATABASE_URL: '',
      REDIS_URL: '',
      LOG_LEVEL: 'info',
      AUTH_BOOTSTRAP_USERNAME: USERNAME,
      AUTH_BOOTSTRAP_PASSWORD: PASSWORD
    }
  }, 'SIGKILL')
  let piped = ''
  child.stdout?.on('data', (chunk: Buffer) => { piped += chunk.toString() })
  child.stderr?.on('data', (chunk: Buffer) => { piped += chunk.toString() })
  const readOutput = (): string => options.logFile === undefined ? piped : readFileSync(options.logFile, 'utf8')
  let output = ''
  const refresh = (): string => { output = readOutput(); return output }
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => { resolve(code) }))
  // 'close' comes when npm and the node it started (which writes into the same pipes) have both
  // let go of them: the last lines ("closed") are in the output by then, which 'exit' does not say.
  const closed = new Promise<void>((resolve) => child.once('close', () => { resolve() }))
  t.teardown(async () => { await stopChild(child, 'SIGKILL') })
  await waitFor('npm start serves', async () => {
    if (child.exitCode !== null) throw new Error(`npm start exited ${child.exitCode}: ${refresh()}`)
    return await fetch(`http://127.0.0.1:${port}/`).then((res) => res.ok, () => false)
  }, { timeoutMs: 90_000, everyMs: 200 })
  // Readiness can answer before the start-up log lines are through the pipe (the logger writes asynchronously).
  await waitFor('the internal listener\'s start line', () => refresh().includes('internal listener:'), { timeoutMs: 10_000, everyMs: 20 })
  const nodePid = Number(/"pid":(\d+)/.exec(output)?.[1])
  t.ok(Number.isInteger(nodePid) && nodePid !== child.pid, `the server's own pid is in its log (${nodePid})`)
  // Should the test fail with the server left behind, it does not outlive the test.
  t.teardown(() => { if (alive(nodePid)) process.kill(nodePid, 'SIGKILL') })
  return { npmPid: child.pid ?? -1, nodePid, output: refresh, exited, closed }
}

function alive (pid: number): boolean {
  try { process.kill(pid, 0); return true } catch { return false }
}

t.test('SIGTERM to npm start stops the server, and the next start takes the same data directory', async (t) => {
  const dataDir = await tempDir(t, 'ats-npm-start-')
  const [port, internalPort] = [await freePort(), await freePort()]

  const first = await npmStart(t, dataDir, port, internalPort)
  t.match(first.output(), new RegExp(`"docs":"http://127\\.0\\.0\\.1:${internalPort}/docs`), 'the start log names the docs page')
  process.kill(first.npmPid, 'SIGTERM')
  await first.exited
  await waitFor('the server process ends', () => !alive(first.nodePid), { timeoutMs: 15_000 })
  t.notOk(alive(first.nodePid), 'the node process ended with npm')
  await first.closed
  t.match(first.output(), /"msg":"closed"/, 'and it closed cleanly (the shutdown ran)')

  const second = await npmStart(t, dataDir, port, internalPort)
  t.ok(alive(second.nodePid), 'a second start on the same data directory serves')
  process.kill(second.npmPid, 'SIGTERM')
  await second.exited
  await waitFor('the second server ends', () => !alive(second.nodePid), { timeoutMs: 15_000 })
})

for (const into of ['a pipe', 'a file'] as const) {
  t.test(`Ctrl-C (SIGINT to npm start's process group), the log into ${into}: the Login in flight finishes, closed, npm exits 0`, async (t) => {
    const dataDir = await tempDir(t, 'ats-npm-start-ctrl-c-')
    const [port, internalPort] = [await freePort(), await freePort()]
    const logFile = into === 'a file' ? join(dataDir, 'service.log') : undefined
    const started = await npmStart(t, join(dataDir, 'data'), port, internalPort, { group: true, logFile })
    const login = await holdLogin(port, USERNAME, PASSWORD)
    process.kill(-started.npmPid, 'SIGINT')
    await waitFor('the closing line', () => /closing: readiness/.test(started.output()) || !alive(started.nodePid), { timeoutMs: 10_000, everyMs: 20 })
    // npm's copy of the signal: by the time npm has passed it on, or after a while.
    await waitFor('the second signal\'s line', () => /closing already/.test(started.output()) || !alive(started.nodePid), { timeoutMs: 2_000, everyMs: 20 }).catch(() => 0)
    const answer = await login.finish()
    t.equal(answer.status, 200, 'the Login in flight at the signals is answered')
    t.match(answer.body, /"token":"2/, 'with a token')
    t.equal(await started.exited, 0, 'npm start exits 0 (the server\'s own status)')
    await started.closed
    await waitFor('the server process ends', () => !alive(started.nodePid), { timeoutMs: 15_000 })
    const output = started.output()
    t.match(output, /"signal":"SIGINT","msg":"closing: readiness now answers 503"/, 'the closing line')
    t.match(output, /"msg":"closed"/, 'and the closed line: the shutdown ran to its end, and its last line was written')
  })
}
