import t from 'tap'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { LOG_FLUSH_BYTES } from '../../src/lib/log-destination.js'

const MODULE = fileURLToPath(new URL('../../dist/lib/log-destination.js', import.meta.url))

/** Runs `body` in a Node process whose stdout is a pipe; resolves with what it wrote and its exit. */
async function run (body: string): Promise<{ stdout: string, code: number | null, writes: number }> {
  const script = `import { createBatchedDestination } from ${JSON.stringify(MODULE)}\nconst log = createBatchedDestination()\n${body}`
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'ignore'] })
  let stdout = ''
  let writes = 0
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk; writes++ })
  const code = await new Promise<number | null>((resolve) => { child.on('close', resolve) })
  return { stdout, code, writes }
}

const lines = (n: number, tag: string): string => `for (let i = 0; i < ${n}; i++) log.write('${tag} ' + i + '\\n')`
const count = (text: string, tag: string): number => text.split('\n').filter((line) => line.startsWith(`${tag} `)).length

t.test('lines of one turn go out together, in order', async (t) => {
  const { stdout, code } = await run(`${lines(1000, 'a')}\nsetTimeout(() => { ${lines(3, 'b')} }, 50)`)
  t.equal(code, 0)
  t.equal(count(stdout, 'a'), 1000, 'every line of the first turn')
  t.equal(count(stdout, 'b'), 3, 'and of a later one')
  t.equal(stdout.split('\n')[999], 'a 999', 'in order')
})

t.test('lines of several turns within a few milliseconds share one write', async (t) => {
  // Five turns of the event loop in a row, a line each (under load, a turn serves a few requests
  // only). The child counts its own write(2)s to stdout; one, or two if the machine stalled it
  // for over 10 ms between turns; a write per turn would be five.
  const { stdout } = await run(`import fs from 'node:fs'
const writeSync = fs.writeSync
let calls = 0
fs.writeSync = (...args) => { if (args[0] === 1) calls++; return writeSync(...args) }
let n = 0
const next = () => { log.write('t ' + n + '\\n'); if (++n < 5) setImmediate(next); else setTimeout(() => { log.flushSync(); fs.writeSync = writeSync; process.stdout.write('writes ' + calls + '\\n') }, 50) }
next()`)
  t.equal(count(stdout, 't'), 5)
  const writes = Number(/^writes (\d+)$/m.exec(stdout)?.[1])
  t.ok(writes >= 1 && writes <= 2, `${writes} write(s) for five turns`)
})

t.test('a lone line is written without waiting for more', async (t) => {
  // Written within LOG_FLUSH_MS: before anything the process writes 100 ms later, not at exit.
  const { stdout } = await run(`log.write('alone\\n')\nsetTimeout(() => { process.stdout.write('later\\n') }, 100)`)
  t.equal(stdout, 'alone\nlater\n')
})

t.test('a large backlog is written at once, without waiting', async (t) => {
  // Lines of 40 bytes, a quarter more than LOG_FLUSH_BYTES: the first LOG_FLUSH_BYTES are written before the turn goes on.
  const lineCount = Math.ceil(LOG_FLUSH_BYTES * 1.25 / 40)
  const { stdout } = await run(`for (let i = 0; i < ${lineCount}; i++) log.write(String(i).padStart(39, '.') + '\\n')\nprocess.stdout.write('marker\\n')`)
  const before = stdout.slice(0, stdout.indexOf('marker\n'))
  t.ok(before.length >= LOG_FLUSH_BYTES, `${before.length} bytes before a write made later in the same turn`)
  t.equal(stdout.split('\n').filter((line) => line.length === 39).length, lineCount, 'and every line, in the end')
})

t.test('buffered lines are written when the process exits, also after an uncaught error', async (t) => {
  const exited = await run(`${lines(500, 'x')}\nprocess.exit(3)`)
  t.equal(exited.code, 3)
  t.equal(count(exited.stdout, 'x'), 500, 'process.exit in the same turn')
  const crashed = await run(`${lines(500, 'y')}\nthrow new Error('boom')`)
  t.equal(crashed.code, 1)
  t.equal(count(crashed.stdout, 'y'), 500, 'an uncaught error in the same turn')
})
