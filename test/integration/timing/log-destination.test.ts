import t, { type Test } from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { LOG_EXIT_FLUSH_MS, LOG_FLUSH_BYTES } from '../../../src/logging/log-destination.js'
import { fifoReader } from '../../support/fifo-reader.js'

const MODULE = fileURLToPath(new URL('../../../dist/logging/log-destination.js', import.meta.url))

interface Run {
  /** What the reader received. */
  stdout: string
  code: number | null
  /** Milliseconds from the child's `exiting` line on stderr (if it wrote one) to its exit. */
  exitMs: number | undefined
}

/**
 * Runs `body` in a Node process whose stdout is a real pipe, read by `cat`; `log` is the
 * service's stdout destination. `meanwhile` may stop and continue the reader.
 */
async function run (t: Test, body: string, options: { maxBufferedBytes?: number, meanwhile?: (reader: ChildProcess, stderrSays: (text: string) => Promise<void>) => Promise<void> } = {}): Promise<Run> {
  const pipe = await fifoReader(t)
  const settings = JSON.stringify({ maxBufferedBytes: options.maxBufferedBytes, base: { pid: 1, hostname: 'test' } })
  const script = `import { batchedStdout } from ${JSON.stringify(MODULE)}\nconst log = batchedStdout(${settings})\n${body}`
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', pipe.writeFd, 'pipe'] })
  await pipe.closeWriteEnd()
  let exitingAt: number | undefined
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
    if (exitingAt === undefined && stderr.includes('exiting\n')) exitingAt = Date.now()
  })
  const stderrSays = async (text: string): Promise<void> => {
    while (!stderr.includes(text)) await new Promise((resolve) => child.stderr?.once('data', resolve))
  }
  const exited = new Promise<number | null>((resolve) => { child.on('exit', (code) => { resolve(code) }) })
  await options.meanwhile?.(pipe.reader, stderrSays)
  const code = await exited
  const exitMs = exitingAt === undefined ? undefined : Date.now() - exitingAt
  pipe.reader.kill('SIGCONT')
  await pipe.readerExited
  const unexpected = stderr.replace(/^(exiting|writing)\n/gm, '')
  if (unexpected !== '') t.comment(unexpected)
  return { stdout: pipe.received(), code, exitMs }
}

const lines = (n: number, tag: string): string => `for (let i = 0; i < ${n}; i++) log.write('${tag} ' + i + '\\n')`
const count = (text: string, tag: string): number => text.split('\n').filter((line) => line.startsWith(`${tag} `)).length

/** The child's own count of what write(2) did with its stdout: whole writes, partial ones, refusals (EAGAIN). */
const countWrites = `import fs from 'node:fs'
const writes = { whole: 0, partial: 0, refused: 0 }
const writeSync = fs.writeSync
fs.writeSync = (fd, buffer, ...rest) => {
  if (fd !== 1) return writeSync(fd, buffer, ...rest)
  try {
    const n = writeSync(fd, buffer, ...rest)
    if (n < buffer.length) writes.partial++
    else writes.whole++
    return n
  } catch (error) {
    if (error.code === 'EAGAIN') writes.refused++
    throw error
  }
}`

t.test('lines of one turn go out together, in order', async (t) => {
  const { stdout, code } = await run(t, `${lines(1000, 'a')}\nsetTimeout(() => { ${lines(3, 'b')} }, 50)`)
  t.equal(code, 0)
  t.equal(count(stdout, 'a'), 1000, 'every line of the first turn')
  t.equal(count(stdout, 'b'), 3, 'and of a later one')
  t.equal(stdout.split('\n')[999], 'a 999', 'in order')
})

t.test('lines of several turns within a few milliseconds share one write', async (t) => {
  // Five turns of the event loop in a row, a line each (under load, a turn serves a few requests
  // only). The child counts its own write(2)s to stdout; one, or two if the machine stalled it
  // for over 10 ms between turns; a write per turn would be five.
  const { stdout } = await run(t, `${countWrites}
let n = 0
const next = () => { log.write('t ' + n + '\\n'); if (++n < 5) setImmediate(next); else setTimeout(() => { log.flushSync(); log.write('writes ' + (writes.whole + writes.partial) + '\\n') }, 50) }
next()`)
  t.equal(count(stdout, 't'), 5)
  const writes = Number(/^writes (\d+)$/m.exec(stdout)?.[1])
  t.ok(writes >= 1 && writes <= 2, `${writes} write(s) for five turns`)
})

t.test('a lone line is written without waiting for more', async (t) => {
  // Written within LOG_FLUSH_MS: before anything the process writes 100 ms later, not at exit.
  const { stdout } = await run(t, 'log.write(\'alone\\n\')\nsetTimeout(() => { process.stdout.write(\'later\\n\') }, 100)')
  t.equal(stdout, 'alone\nlater\n')
})

t.test('a large backlog is written at once, without waiting', async (t) => {
  // Lines of 40 bytes, a quarter more than LOG_FLUSH_BYTES, in one turn: the child counts the
  // bytes write(2) took before the turn ended. The pipe (64 KiB, empty) takes a full batch.
  const lineCount = Math.ceil(LOG_FLUSH_BYTES * 1.25 / 40)
  const { stdout } = await run(t, `import fs from 'node:fs'
let taken = 0
const writeSync = fs.writeSync
fs.writeSync = (...args) => { const n = writeSync(...args); if (args[0] === 1) taken += n; return n }
for (let i = 0; i < ${lineCount}; i++) log.write(String(i).padStart(39, '.') + '\\n')
const inTurn = taken
setTimeout(() => { log.write('taken ' + inTurn + '\\n') }, 50)`)
  const taken = Number(/^taken (\d+)$/m.exec(stdout)?.[1])
  t.ok(taken >= LOG_FLUSH_BYTES, `${taken} bytes written before the turn ended`)
  t.equal(stdout.split('\n').filter((line) => line.length === 39).length, lineCount, 'and every line, in the end')
})

t.test('buffered lines are written when the process exits, also after an uncaught error', async (t) => {
  const exited = await run(t, `${lines(500, 'x')}\nprocess.exit(3)`)
  t.equal(exited.code, 3)
  t.equal(count(exited.stdout, 'x'), 500, 'process.exit in the same turn')
  const crashed = await run(t, `${lines(500, 'y')}\nthrow new Error('boom')`)
  t.equal(crashed.code, 1)
  t.equal(count(crashed.stdout, 'y'), 500, 'an uncaught error in the same turn')
})

/** Line `i` of the drained-pipe test: 10 to 2,000 characters, some of two, three and four bytes. */
const lineText = 'const text = (i) => [...(\'seq \' + i + \' \' + \'aé€😀\'.repeat(1 + (i * 7919) % 400))].slice(0, 10 + (i * 104729) % 1990).join(\'\')'

t.test('a reader that drains the pipe gets every line, whole and in order, though the pipe is often full', async (t) => {
  // 4,000 lines (about 4 MB with the multi-byte characters) in bursts of 200 a turn: far more than
  // the pipe holds, so write(2) takes part of a batch or nothing, often, and a line's bytes (a
  // character's, even) are cut across writes; but never more than the buffer holds, so none is dropped.
  const total = 4000
  const { stdout, code } = await run(t, `${countWrites}
${lineText}
let i = 0
const burst = () => {
  for (const end = i + 200; i < end && i < ${total}; i++) log.write(text(i) + '\\n')
  if (i < ${total}) setImmediate(burst)
  else setTimeout(() => { log.write('writes ' + JSON.stringify(writes) + ' dropped ' + log.droppedLines() + '\\n') }, 20)
}
burst()`)
  t.equal(code, 0)
  const got = stdout.split('\n')
  t.equal(got.pop(), '', 'the output ends with a whole line')
  const summary = got.pop() ?? ''
  const match = /^writes (\{.*\}) dropped (\d+)$/.exec(summary)
  t.ok(match, `the child's summary: ${summary}`)
  const writes = JSON.parse(match?.[1] ?? '{}') as { whole: number, partial: number, refused: number }
  t.ok(writes.partial + writes.refused > 0, `the pipe was full: ${writes.partial} partial writes, ${writes.refused} refused`)
  t.equal(match?.[2], '0', 'no line dropped')
  const expected = (i: number): string => [...('seq ' + i + ' ' + 'aé€😀'.repeat(1 + (i * 7919) % 400))].slice(0, 10 + (i * 104729) % 1990).join('')
  t.equal(got.length, total, 'every line arrived')
  const wrong = got.findIndex((line, i) => line !== expected(i))
  t.equal(wrong, -1, wrong === -1 ? 'each one whole and in order' : `line ${wrong} differs: ${got[wrong]?.slice(0, 60)}`)
})

t.test('a reader that stops: the writer goes on, lines past the bound are dropped whole and counted, and a line says so when writing works again', async (t) => {
  // Lines of about 100 bytes, 100 every millisecond for 1.5 s; the reader stops for 500 ms after
  // 400 ms. The bound (128 KiB) and the pipe (64 KiB) hold about 2,000 of them: the rest of the
  // stop is dropped, which only a writer that went on writing can do (a blocked one drops nothing).
  // The event-loop delay is reported, not judged here: on a busy machine it is mostly the
  // machine's (test/integration/timing/log-pipe.test.ts judges the service's, against a quiet moment).
  const { stdout, code } = await run(t, `import { monitorEventLoopDelay } from 'node:perf_hooks'
const delay = monitorEventLoopDelay({ resolution: 1 })
delay.enable()
let seq = 0
const started = Date.now()
process.stderr.write('writing\\n')
const timer = setInterval(() => {
  for (let k = 0; k < 100; k++) log.write('{"seq":' + (seq++) + ',"pad":"' + 'x'.repeat(80) + '"}\\n')
  if (Date.now() - started > 1500) {
    clearInterval(timer)
    delay.disable()
    setTimeout(() => { log.write(JSON.stringify({ written: seq, dropped: log.droppedLines(), delayMaxMs: delay.max / 1e6 }) + '\\n') }, 100)
  }
}, 1)`, {
    maxBufferedBytes: 128 * 1024,
    meanwhile: async (reader, stderrSays) => {
      await stderrSays('writing\n')
      await sleep(400)
      reader.kill('SIGSTOP')
      await sleep(500)
      reader.kill('SIGCONT')
    }
  })
  t.equal(code, 0)
  const parsed = stdout.split('\n').slice(0, -1).map((line) => JSON.parse(line) as { seq?: number, dropped?: number, msg?: string, written?: number, delayMaxMs?: number })
  t.pass(`every one of ${parsed.length} lines is whole JSON`)
  const summary = parsed.pop()
  t.comment(`event-loop delay max in the writer: ${summary?.delayMaxMs?.toFixed(1)} ms`)
  t.ok((summary?.dropped ?? 0) > 0, `${summary?.dropped} lines dropped while the reader was stopped`)
  // Walk the sequence: a gap is allowed only right after a notice, and must be exactly its count.
  let next = 0
  let notices = 0
  let announced = 0
  let wrong: string | undefined
  for (const line of parsed) {
    if (line.msg === 'log lines dropped') {
      notices++
      announced += line.dropped ?? 0
      next += line.dropped ?? 0
      continue
    }
    if (line.seq !== next) {
      wrong ??= `seq ${line.seq} where ${next} was due`
      next = line.seq ?? next
    }
    next++
  }
  t.equal(wrong, undefined, 'no line missing but those a notice accounts for, none out of order')
  t.ok(notices > 0, `${notices} line(s) say how many were lost`)
  t.equal(announced, summary?.dropped, 'and they add up to the count')
  t.equal(next, summary?.written, 'every line written is there or counted')
})

t.test('a backlog is written a few batches a turn when the reader comes back, not all at once', async (t) => {
  // 3 MB of lines while the reader is stopped: the pipe takes 64 KiB, the rest waits (under the
  // 4 MiB bound, so none is dropped). Encoding and writing it in one piece took 45 ms of the loop
  // (4 MiB); a batch (64 KiB) at a time, at most four a turn, it goes out between other work.
  const { stdout, code } = await run(t, `import fs from 'node:fs'
let largest = 0
let turn = 0
let largestTurn = 0
const writeSync = fs.writeSync
fs.writeSync = (fd, buffer, ...rest) => {
  if (fd === 1) { largest = Math.max(largest, buffer.length); turn += buffer.length; largestTurn = Math.max(largestTurn, turn) }
  return writeSync(fd, buffer, ...rest)
}
const everyTurn = () => { turn = 0; if (!done) setImmediate(everyTurn) }
let done = false
everyTurn()
for (let i = 0; i < 30000; i++) log.write('{"seq":' + i + ',"pad":"' + 'x'.repeat(80) + '"}\\n')
process.stderr.write('buffered\\n')
setTimeout(() => { done = true; log.write(JSON.stringify({ largest, largestTurn, dropped: log.droppedLines() }) + '\\n') }, 1500)`, {
    meanwhile: async (reader, stderrSays) => {
      reader.kill('SIGSTOP')
      await stderrSays('buffered\n')
      await sleep(200)
      reader.kill('SIGCONT')
    }
  })
  t.equal(code, 0)
  const lines = stdout.split('\n').slice(0, -1)
  const summary = JSON.parse(lines.pop() ?? '{}') as { largest: number, largestTurn: number, dropped: number }
  t.equal(summary.dropped, 0, 'none dropped')
  t.ok(lines.every((line, i) => line.startsWith(`{"seq":${i},`)), `all ${lines.length} lines, in order`)
  t.ok(summary.largest <= LOG_FLUSH_BYTES + 200, `the most handed to one write(2): ${summary.largest} bytes (a batch)`)
  t.ok(summary.largestTurn <= 4 * (LOG_FLUSH_BYTES + 200), `the most in one turn: ${summary.largestTurn} bytes (four batches at most)`)
})

t.test('at exit, what is buffered waits for a stopped reader to read again', async (t) => {
  // 1 MB in lines (far more than the pipe holds) and exit at once: the reader is stopped, and
  // continues 500 ms after the process decided to exit; the process waits for it.
  const { stdout, code, exitMs } = await run(t, `${lines(10_000, 'w'.repeat(90))}\nprocess.stderr.write('exiting\\n')\nprocess.exit(0)`, {
    meanwhile: async (reader, stderrSays) => {
      reader.kill('SIGSTOP')
      await stderrSays('exiting\n')
      await sleep(500)
      reader.kill('SIGCONT')
    }
  })
  t.equal(code, 0)
  t.equal(count(stdout, 'w'.repeat(90)), 10_000, 'every line, after the reader continued')
  // Within LOG_EXIT_FLUSH_MS: every line came through, which the deadline would have cut.
  t.ok(exitMs !== undefined && exitMs >= 400, `the process ended ${exitMs} ms after deciding to: after the reader continued`)
})

t.test('at exit, a reader that never reads again holds the process LOG_EXIT_FLUSH_MS at most', async (t) => {
  const { stdout, code, exitMs } = await run(t, `${lines(10_000, 'z'.repeat(90))}\nprocess.stderr.write('exiting\\n')\nprocess.exit(0)`, {
    meanwhile: async (reader) => { reader.kill('SIGSTOP') }
  })
  t.equal(code, 0)
  // Not before the deadline; that it ended at all is the deadline at work (the reader never reads
  // again). No upper bound: a busy machine can stretch any.
  t.ok(exitMs !== undefined && exitMs >= LOG_EXIT_FLUSH_MS - 300, `ended ${exitMs} ms after deciding to (the deadline: ${LOG_EXIT_FLUSH_MS}), not before`)
  const got = stdout.split('\n')
  got.pop() // a line cut by the deadline, or '' after a whole one
  t.ok(got.length > 0 && got.length < 10_000, `the pipe's worth arrived: ${got.length} lines`)
  t.ok(got.every((line, i) => line === `${'z'.repeat(90)} ${i}`), 'whole, in order')
})
