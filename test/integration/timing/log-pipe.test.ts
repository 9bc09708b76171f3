import autocannon from 'autocannon'
import { spawn, type ChildProcess } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { fifoReader } from '../../support/fifo-reader.js'
import { freePort } from '../../../support/processes.js'
import { jsonObject, sample } from '../../operations/support.js'
import { cliCommand } from '../../../support/service.js'

/**
 * The service as a container runtime runs it: stdout a pipe, read by another process (`cat`,
 * into a file the test reads at the end), which the test stops (SIGSTOP) the way a stalled log
 * collector stops reading.
 */

const PASSWORD = 'pipe test & secret'

interface Piped {
  service: ChildProcess
  reader: ChildProcess
  baseUrl: string
  /** What the reader received so far. */
  received: () => string
  serviceExited: Promise<number | null>
  readerExited: Promise<number | null>
}

/** Its port was taken between freePort() and its listen (beside the Cluster step's nodes and their bus ports, +10000). */
class AddressInUse extends Error {}

/**
 * The built service on the embedded default, its stdout a FIFO drained by `cat`; ready to serve.
 * A port taken by another process before the service listened on it: again, on a new pipe and port.
 */
async function startPiped (t: Test, env: Record<string, string> = {}): Promise<Piped> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startPipedOnce(t, env)
    } catch (error) {
      if (!(error instanceof AddressInUse) || attempt === 3) throw error
      t.comment(`attempt ${attempt}: ${error.message.split('\n')[0] ?? ''}; again on another port`)
    }
  }
}

async function startPipedOnce (t: Test, env: Record<string, string>): Promise<Piped> {
  const pipe = await fifoReader(t)
  const port = await freePort()
  const service = spawn(...cliCommand(['serve']), {
    cwd: pipe.dir,
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: String(port), INTERNAL_PORT: '0', AUTH_PUBLIC_INTERNALS: 'true', AUTH_BOOTSTRAP_USERNAME: 'admin', AUTH_BOOTSTRAP_PASSWORD: PASSWORD, ...env },
    stdio: ['ignore', pipe.writeFd, 'pipe']
  })
  // The write end now lives in the service only: the reader sees the end of the pipe when the service ends.
  await pipe.closeWriteEnd()
  let stderr = ''
  service.stderr?.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const serviceExited = new Promise<number | null>((resolve) => { service.once('exit', (code) => { resolve(code) }) })
  t.teardown(async () => {
    if (service.exitCode !== null || service.signalCode !== null) return
    service.kill('SIGKILL')
    await serviceExited
  })
  const baseUrl = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 60_000
  for (;;) {
    if (service.exitCode !== null) {
      const message = `the service exited with ${service.exitCode}:\n${stderr}\n${pipe.received()}`
      throw stderr.includes('EADDRINUSE') ? new AddressInUse(message) : new Error(message)
    }
    if (Date.now() > deadline) throw new Error(`not ready within 60 s:\n${stderr}\n${pipe.received()}`)
    const ready = await fetch(`${baseUrl}/health/ready`, { signal: AbortSignal.timeout(2000) }).then((response) => response.status === 200, () => false)
    if (ready) break
    await sleep(100)
  }
  return { service, reader: pipe.reader, baseUrl, received: pipe.received, serviceExited, readerExited: pipe.readerExited }
}

async function login (baseUrl: string): Promise<string> {
  const response = await fetch(`${baseUrl}/auth/Login`, { method: 'POST', signal: AbortSignal.timeout(10_000), body: new URLSearchParams({ username: 'admin', password: PASSWORD }) })
  const body = await response.json() as { token?: string }
  if (typeof body.token !== 'string') throw new Error(`no token: ${JSON.stringify(body)}`)
  return body.token
}

/** /metrics, or undefined when it takes longer than `timeoutMs` to answer. */
async function metrics (baseUrl: string, timeoutMs = 10_000): Promise<string | undefined> {
  try {
    return await (await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(timeoutMs) })).text()
  } catch {
    return undefined
  }
}

/** Every line the reader received, parsed; a line that is not one whole JSON object fails the test. */
function parsedLines (t: Test, text: string): Array<Record<string, unknown>> {
  t.ok(text.endsWith('\n'), 'the output ends with a whole line')
  const lines = text.split('\n').slice(0, -1)
  const broken = lines.filter((line) => jsonObject(line) === undefined)
  t.same(broken.slice(0, 3), [], `every one of ${lines.length} lines is one whole JSON object (${broken.length} are not)`)
  return lines.map((line) => jsonObject(line) ?? {})
}

const lagMax = (text: string | undefined): number => sample(text ?? '', 'nodejs_eventloop_lag_max_seconds') ?? Number.NaN
const lagP99 = (text: string | undefined): number => sample(text ?? '', 'nodejs_eventloop_lag_p99_seconds') ?? Number.NaN
const droppedLines = (text: string | undefined): number => sample(text ?? '', 'auth_log_lines_dropped_total') ?? Number.NaN

interface StopWindow {
  /** Event-loop delay max (s) with the reader reading, just before the stop: what the machine alone costs. */
  control: number
  stoppedAt: number
  resumedAt: number
  /** /metrics at the end of the stop (undefined: not answered within 3 s) and 1.5 s after SIGCONT. */
  duringStop: string | undefined
  after: string | undefined
  droppedBefore: number
}

/** Stops the reader for 2 s between scrapes of /metrics (each scrape resets Node's event-loop delay histogram). */
async function stopReader (piped: Piped): Promise<StopWindow> {
  await metrics(piped.baseUrl)
  await sleep(1500)
  const before = await metrics(piped.baseUrl)
  const stoppedAt = Date.now()
  piped.reader.kill('SIGSTOP')
  await sleep(2000)
  // Still stopped: a service whose loop waits for the reader cannot answer this.
  const duringStop = await metrics(piped.baseUrl, 3000)
  const resumedAt = Date.now()
  piped.reader.kill('SIGCONT')
  await sleep(1500)
  const after = await metrics(piped.baseUrl)
  return { control: lagMax(before), stoppedAt, resumedAt, duringStop, after, droppedBefore: droppedLines(before) }
}

t.test('a reader stopped for 2 s under Authenticate load: the event loop never stalls, lines are dropped and counted, and flow again', async (t) => {
  // A small bound, so that the stop overflows it even at the modest rate below.
  const piped = await startPiped(t, { LOG_BUFFER_BYTES: String(256 * 1024) })
  const token = await login(piped.baseUrl)
  const answeredAt: number[] = []
  const statuses = new Map<number, number>()
  let load: autocannon.Instance | undefined
  const finished = new Promise<void>((resolve, reject) => {
    // A steady 2,000 requests a second rather than all the machine has: the event-loop delay is
    // to show what the log costs the service, not how busy this (shared, 2-core) machine is.
    load = autocannon({ url: `${piped.baseUrl}/auth/Authenticate?token=${token}`, connections: 10, overallRate: 2000, duration: 60, sampleInt: 100 }, (error: unknown) => {
      if (error === null || error === undefined) resolve()
      else reject(error instanceof Error ? error : new Error(String(error)))
    })
  })
  load?.on('response', (_client, statusCode) => {
    answeredAt.push(Date.now())
    statuses.set(statusCode, (statuses.get(statusCode) ?? 0) + 1)
  })

  // Past the first second or two (compiling the hot path, the first collections) the loop settles.
  await sleep(2500)
  // Node's figure includes its 10 ms sampling interval. When the loop stalls for 25 ms or more with
  // the reader reading, the machine (other processes, the hypervisor) stalls it, not the log, and
  // the maximum of the stop proves little either way: then measure again, up to four times.
  const QUIET = 0.025
  // A stall the log caused would last as long as the reader is stopped (2 s: the old synchronous
  // write blocked until it read again); a quarter of that is a bound a busy CI machine's own
  // stalls do not reach (p99 0.056 s was seen at load 12) and that such a stall cannot pass.
  const LIMIT = 0.5
  let window = await stopReader(piped)
  for (let attempt = 2; attempt <= 4 && !(window.control < QUIET); attempt++) {
    t.comment(`the loop stalled ${window.control} s with the reader reading: the machine is too busy to measure; again`)
    window = await stopReader(piped)
  }
  load?.stop()
  await finished

  t.ok(window.duringStop !== undefined, '/metrics answered while the reader was stopped')
  t.ok(window.after !== undefined, '/metrics answered after SIGCONT')
  const figures = `max ${lagMax(window.duringStop)} s during the stop, ${lagMax(window.after)} s after SIGCONT while the backlog is written ` +
    `(p99 ${lagP99(window.duringStop)} s, ${lagP99(window.after)} s; with the reader reading: max ${window.control} s)`
  if (window.control < QUIET) {
    t.ok(lagMax(window.duringStop) < LIMIT && lagMax(window.after) < LIMIT, `event-loop delay under ${LIMIT} s: ${figures}`)
  } else {
    // Never quiet: the busy machine's own stalls make the maximum, so judge what the log would
    // make of every wait (the old synchronous write stalled the loop at each one): the 99th percentile.
    t.comment('the machine was never quiet enough to judge the maximum')
    t.ok(lagP99(window.duringStop) < LIMIT && lagP99(window.after) < LIMIT, `event-loop delay p99 under ${LIMIT} s: ${figures}`)
  }
  const answeredDuringStop = answeredAt.filter((at) => at > window.stoppedAt + 200 && at < window.resumedAt).length
  t.ok(answeredDuringStop > 0, `${answeredDuringStop} requests answered while the reader was stopped`)
  t.same([...statuses.keys()], [200], 'every request was answered 200')
  const droppedDuringStop = droppedLines(window.duringStop) - window.droppedBefore
  t.ok(droppedDuringStop > 0, `lines dropped while the reader was stopped are counted: ${droppedDuringStop}`)
  const dropped = droppedLines(await metrics(piped.baseUrl))

  piped.service.kill('SIGTERM')
  t.equal(await piped.serviceExited, 0, 'SIGTERM ends the service cleanly')
  t.equal(await piped.readerExited, 0, 'the reader saw the end of the pipe')

  const lines = parsedLines(t, piped.received())
  const notices = lines.filter((line) => line.msg === 'log lines dropped')
  t.ok(notices.some((line) => Number(line.time) >= window.resumedAt), 'a line written after SIGCONT says lines were lost')
  t.equal(notices.reduce((sum, line) => sum + Number(line.dropped), 0), dropped, 'the lines that say so add up to the counter')
  const accessAfter = lines.filter((line) => line.msg === 'request completed' && Number(line.time) > window.resumedAt + 100)
  t.ok(accessAfter.length > 0, `access lines flow again after SIGCONT (${accessAfter.length})`)
  t.equal(lines.at(-1)?.msg, 'closed', 'the last line is the shutdown\'s, flushed at exit')
})

t.test('SIGTERM writes every buffered line, waiting for a reader that was stopped', async (t) => {
  const piped = await startPiped(t)
  const token = await login(piped.baseUrl)
  piped.reader.kill('SIGSTOP')
  // 400 access lines (about 130 KB): twice what the pipe holds, so most wait in the service.
  const ids: string[] = []
  for (let batch = 0; batch < 20; batch++) {
    await Promise.all(Array.from({ length: 20 }, async (_, i) => {
      const id = `sigterm-${batch}-${i}`
      ids.push(id)
      const response = await fetch(`${piped.baseUrl}/auth/Authenticate?token=${token}`, { headers: { 'x-request-id': id }, signal: AbortSignal.timeout(10_000) })
      await response.arrayBuffer()
    }))
  }
  piped.service.kill('SIGTERM')
  await sleep(500)
  t.equal(piped.service.exitCode, null, 'the service waits for the reader')
  piped.reader.kill('SIGCONT')
  t.equal(await piped.serviceExited, 0, 'and ends cleanly once it reads')
  t.equal(await piped.readerExited, 0)
  const lines = parsedLines(t, piped.received())
  const logged = new Set(lines.filter((line) => line.msg === 'request completed').map((line) => line.reqId))
  t.same(ids.filter((id) => !logged.has(id)), [], `all ${ids.length} access lines arrived`)
  t.equal(lines.filter((line) => line.msg === 'log lines dropped').length, 0, 'none was dropped')
  t.equal(lines.at(-1)?.msg, 'closed', 'down to the last line of the shutdown')
})
