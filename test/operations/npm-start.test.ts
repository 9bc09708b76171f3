import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { freePort, spawnTracked, stopChild, tempDir, waitFor } from '../../support/processes.js'

/*
 * `npm start` as a newcomer runs it: it serves, its log says where the docs page is,
 * and `kill -TERM <pid of npm start>` stops the server itself — not only npm, leaving the
 * node process running under PID 1 and holding ./data so that the next start is refused.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

interface Started { npmPid: number, nodePid: number, output: () => string, exited: Promise<number | null>, closed: Promise<void> }

async function npmStart (t: Test, dataDir: string, port: number, internalPort: number): Promise<Started> {
  const child = spawnTracked('npm', ['start', '--silent'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, AUTH_DATA_DIR: dataDir, PORT: String(port), INTERNAL_PORT: String(internalPort), HOST: '127.0.0.1', DATABASE_URL: '', REDIS_URL: '', LOG_LEVEL: 'info' }
  }, 'SIGKILL')
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => { resolve(code) }))
  // 'close' comes when npm and the node it started (which writes into the same pipes) have both
  // let go of them: the last lines ("closed") are in the output by then, which 'exit' does not say.
  const closed = new Promise<void>((resolve) => child.once('close', () => { resolve() }))
  t.teardown(async () => { await stopChild(child, 'SIGKILL') })
  await waitFor('npm start serves', async () => {
    if (child.exitCode !== null) throw new Error(`npm start exited ${child.exitCode}: ${output}`)
    return await fetch(`http://127.0.0.1:${port}/`).then((res) => res.ok, () => false)
  }, { timeoutMs: 90_000, everyMs: 200 })
  // Readiness can answer before the start-up log lines are through the pipe (the logger writes asynchronously).
  await waitFor('the internal listener\'s start line', () => output.includes('internal listener:'), { timeoutMs: 10_000, everyMs: 20 })
  const nodePid = Number(/"pid":(\d+)/.exec(output)?.[1])
  t.ok(Number.isInteger(nodePid) && nodePid !== child.pid, `the server's own pid is in its log (${nodePid})`)
  // Should the test fail with the server left behind, it does not outlive the test.
  t.teardown(() => { if (alive(nodePid)) process.kill(nodePid, 'SIGKILL') })
  return { npmPid: child.pid ?? -1, nodePid, output: () => output, exited, closed }
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
