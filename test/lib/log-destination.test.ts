import t from 'tap'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

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

t.test('lines of one turn go out together, in order, at the end of the turn', async (t) => {
  const { stdout, code } = await run(`${lines(1000, 'a')}\nsetTimeout(() => { ${lines(3, 'b')} }, 20)`)
  t.equal(code, 0)
  t.equal(count(stdout, 'a'), 1000, 'every line of the first turn')
  t.equal(count(stdout, 'b'), 3, 'and of a later one')
  t.equal(stdout.split('\n')[999], 'a 999', 'in order')
})

t.test('a lone line is written without waiting for more', async (t) => {
  // Written at the end of its turn: before anything the process writes 100 ms later, not at exit.
  const { stdout } = await run(`log.write('alone\\n')\nsetTimeout(() => { process.stdout.write('later\\n') }, 100)`)
  t.equal(stdout, 'alone\nlater\n')
})

t.test('buffered lines are written when the process exits, also after an uncaught error', async (t) => {
  const exited = await run(`${lines(500, 'x')}\nprocess.exit(3)`)
  t.equal(exited.code, 3)
  t.equal(count(exited.stdout, 'x'), 500, 'process.exit in the same turn')
  const crashed = await run(`${lines(500, 'y')}\nthrow new Error('boom')`)
  t.equal(crashed.code, 1)
  t.equal(count(crashed.stdout, 'y'), 500, 'an uncaught error in the same turn')
})
