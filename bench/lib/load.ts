import autocannon from 'autocannon'
import { setTimeout as sleep } from 'node:timers/promises'
import { percentile } from './stats.js'

/** What to send: one fixed request, or a sequence (with setupRequest/onResponse) each connection cycles through. */
export interface LoadSpec {
  url: string
  method?: 'GET' | 'POST'
  headers?: Record<string, string>
  body?: string
  requests?: autocannon.Request[]
  /** Answers that count as right; any other status makes the run suspect (reported). */
  expectedStatuses: readonly number[]
}

/** Identical for every scenario of a bench run. */
export interface LoadSettings {
  connections: number
  pipelining: number
  durationSeconds: number
  timeoutSeconds: number
}

export interface Sample {
  requestsPerSecond: number
  /** Milliseconds, from every response's own time (autocannon's histogram rounds to whole ms). */
  p50Ms: number
  p99Ms: number
  responses: number
  /** Responses with a status the scenario does not expect, plus connection errors and timeouts. */
  unexpected: number
  statuses: Record<string, number>
  /** CPU time (user + system, all threads) the server under load spent per response; NaN when not known. */
  cpuMicrosPerRequest: number
  /** The same by kind of thread (lib/children.ts cpuSecondsByThread), when the scenario asks for it. */
  cpuMicrosPerRequestByThread?: Record<string, number>
  /** Bytes of log its stdout's reader received per response (a logging server only); NaN when not known. */
  logBytesPerRequest: number
  /** The requests sent within a window of the run (a run with a `Pause`). */
  window?: WindowStats
}

/** The requests a run sent between two instants (while the log reader was stopped, or the same seconds of a run where it was not). */
export interface WindowStats {
  /** Whether the reader was really stopped in the window (false: the same seconds of a reference run). */
  stopped: boolean
  /** When the window opened, seconds after the run began; how long it lasted. */
  startSeconds: number
  seconds: number
  /** Requests sent in the window that were answered before the run ended. */
  answered: number
  answeredPerSecond: number
  p99Ms: number
  maxMs: number
}

/** Where a server's figures are read: its CPU clock, and the bytes its log reader received. */
export interface ServerClocks {
  cpuSeconds?: () => number
  /** CPU seconds by kind of thread; read only for the scenarios that ask for the split. */
  cpuSecondsByThread?: () => Record<string, number>
  logBytes?: () => number
}

/**
 * A window in a run: `stop` is called `atSeconds` after the run begins, `resume`
 * `forSeconds` later (and at the latest when the run ends). Without them the window only
 * marks the same seconds in a reference run.
 */
export interface Pause {
  atSeconds: number
  forSeconds: number
  stop?: () => void
  resume?: () => void
}

/** What one autocannon run saw, before it is reduced to a Sample (runs can be merged first). */
interface RawRun {
  latencies: Float64Array
  /** When each answered request was sent (performance.now(), ms); kept in a run with a window only. */
  sentAt?: Float64Array
  statuses: Record<string, number>
  unexpected: number
  elapsedSeconds: number
  /** CPU seconds the server under load spent during the run; NaN when not known. */
  cpuSeconds: number
  cpuSecondsByThread?: Record<string, number>
  window?: { stopped: boolean, startedAt: number, from: number, to: number }
}

/** The reader takes a batch of lines a few ms after the server wrote it (the service writes every 10 ms). */
const LOG_SETTLE_MS = 30

/**
 * One autocannon run. Latencies are recorded from autocannon's `response` events, in
 * fractional milliseconds, because its own histogram keeps whole milliseconds only,
 * too coarse for sub-millisecond answers. With a `pause`, each answered request's send time
 * is kept too (its answer's time less its latency), to pick out the requests sent in the window.
 */
async function measure (spec: LoadSpec, settings: LoadSettings, clocks: ServerClocks = {}, pause?: Pause): Promise<RawRun> {
  const cpuSeconds = clocks.cpuSeconds ?? (() => Number.NaN)
  let latencies = new Float64Array(1 << 16)
  let sentAt = pause === undefined ? undefined : new Float64Array(1 << 16)
  let count = 0
  const statuses: Record<string, number> = {}
  const expected = new Set(spec.expectedStatuses)
  let unexpected = 0
  const cpuBefore = cpuSeconds()
  const threadsBefore = clocks.cpuSecondsByThread?.()
  const started = performance.now()
  const window = pause === undefined ? undefined : { stopped: pause.stop !== undefined, startedAt: started, from: Number.NaN, to: Number.NaN }
  const timers: NodeJS.Timeout[] = []
  let stopped = false
  const resume = (): void => {
    if (window === undefined || !Number.isNaN(window.to)) return
    window.to = performance.now()
    if (stopped) pause?.resume?.()
    stopped = false
  }
  try {
    const result = await new Promise<autocannon.Result>((resolve, reject) => {
      const instance = autocannon({
        url: spec.url,
        method: spec.method ?? 'GET',
        headers: spec.headers ?? {},
        ...(spec.body === undefined ? {} : { body: spec.body }),
        ...(spec.requests === undefined ? {} : { requests: spec.requests }),
        connections: settings.connections,
        pipelining: settings.pipelining,
        duration: settings.durationSeconds,
        // autocannon checks its stop flag only when it takes a sample (every second by default),
        // so a run shorter than that would last a whole second.
        sampleInt: Math.min(1000, Math.max(5, settings.durationSeconds * 100)),
        timeout: settings.timeoutSeconds
      }, (error: unknown, done: autocannon.Result) => {
        if (error !== null && error !== undefined) reject(error instanceof Error ? error : new Error(String(error)))
        else resolve(done)
      })
      if (pause !== undefined && window !== undefined) {
        timers.push(setTimeout(() => {
          window.from = performance.now()
          pause.stop?.()
          stopped = true
        }, pause.atSeconds * 1000))
        timers.push(setTimeout(resume, (pause.atSeconds + pause.forSeconds) * 1000))
      }
      instance.on('response', (_client, statusCode, _bytes, responseTime) => {
        if (count === latencies.length) {
          latencies = grow(latencies)
          if (sentAt !== undefined) sentAt = grow(sentAt)
        }
        if (sentAt !== undefined) sentAt[count] = performance.now() - responseTime
        latencies[count++] = responseTime
        statuses[statusCode] = (statuses[statusCode] ?? 0) + 1
        if (!expected.has(statusCode)) unexpected++
      })
    })
    const elapsedSeconds = (result.finish.getTime() - result.start.getTime()) / 1000 || (performance.now() - started) / 1000
    return {
      latencies: latencies.subarray(0, count),
      ...(sentAt === undefined ? {} : { sentAt: sentAt.subarray(0, count) }),
      statuses,
      unexpected: unexpected + result.errors + result.timeouts,
      elapsedSeconds,
      cpuSeconds: cpuSeconds() - cpuBefore,
      ...(threadsBefore === undefined || clocks.cpuSecondsByThread === undefined ? {} : { cpuSecondsByThread: spent(threadsBefore, clocks.cpuSecondsByThread()) }),
      ...(window === undefined ? {} : { window })
    }
  } finally {
    for (const timer of timers) clearTimeout(timer)
    // A reader stopped when the run ended (or failed) is never left stopped.
    if (window !== undefined && !Number.isNaN(window.from)) resume()
  }
}

/** CPU seconds per kind of thread between two readings (a kind that appeared since counts from zero). */
function spent (before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(after).map(([kind, seconds]) => [kind, seconds - (before[kind] ?? 0)]))
}

function grow (values: Float64Array<ArrayBuffer>): Float64Array<ArrayBuffer> {
  const grown = new Float64Array(values.length * 2)
  grown.set(values)
  return grown
}

/** The answered requests a run sent inside its window; undefined when it had none or the window never opened. */
function windowStats (run: RawRun): WindowStats | undefined {
  const { window, sentAt } = run
  if (window === undefined || sentAt === undefined || Number.isNaN(window.from) || Number.isNaN(window.to)) return undefined
  const inside: number[] = []
  for (let index = 0; index < sentAt.length; index++) {
    const sent = sentAt[index] ?? Number.NaN
    if (sent >= window.from && sent < window.to) inside.push(run.latencies[index] ?? Number.NaN)
  }
  const sorted = Float64Array.from(inside).sort()
  const seconds = (window.to - window.from) / 1000
  return {
    stopped: window.stopped,
    startSeconds: (window.from - window.startedAt) / 1000,
    seconds,
    answered: sorted.length,
    answeredPerSecond: sorted.length / seconds,
    p99Ms: percentile(sorted, 99),
    maxMs: sorted.length === 0 ? Number.NaN : sorted[sorted.length - 1] ?? Number.NaN
  }
}

function perRequestByThread (runs: readonly RawRun[], responses: number): Record<string, number> {
  const total: Record<string, number> = {}
  for (const run of runs) for (const [kind, seconds] of Object.entries(run.cpuSecondsByThread ?? {})) total[kind] = (total[kind] ?? 0) + seconds
  return Object.fromEntries(Object.entries(total).map(([kind, seconds]) => [kind, seconds * 1e6 / responses]))
}

/** Several runs of one load as if they were one: responses and seconds summed, percentiles over every response. */
function toSample (runs: readonly RawRun[], logBytes = Number.NaN): Sample {
  const responses = runs.reduce((sum, run) => sum + run.latencies.length, 0)
  const all = new Float64Array(responses)
  let offset = 0
  const statuses: Record<string, number> = {}
  for (const run of runs) {
    all.set(run.latencies, offset)
    offset += run.latencies.length
    for (const [status, count] of Object.entries(run.statuses)) statuses[status] = (statuses[status] ?? 0) + count
  }
  const sorted = all.sort()
  const seconds = runs.reduce((sum, run) => sum + run.elapsedSeconds, 0)
  const window = runs.length === 1 && runs[0] !== undefined ? windowStats(runs[0]) : undefined
  return {
    requestsPerSecond: responses / seconds,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    responses,
    unexpected: runs.reduce((sum, run) => sum + run.unexpected, 0),
    statuses,
    cpuMicrosPerRequest: runs.reduce((sum, run) => sum + run.cpuSeconds, 0) * 1e6 / responses,
    ...(runs.every((run) => run.cpuSecondsByThread !== undefined) && runs.length > 0 ? { cpuMicrosPerRequestByThread: perRequestByThread(runs, responses) } : {}),
    logBytesPerRequest: logBytes / responses,
    ...(window === undefined ? {} : { window })
  }
}

/**
 * Bytes the reader got while `body` ran, the lines of its last moments included: read
 * LOG_SETTLE_MS after it. Only the server under load writes to its reader meanwhile (each
 * logging server has a reader of its own), so the count is that load's.
 */
async function withLogBytes<T> (clocks: readonly ServerClocks[], body: () => Promise<T>): Promise<{ result: T, bytes: number[] }> {
  const before = clocks.map((clock) => clock.logBytes?.() ?? Number.NaN)
  const result = await body()
  if (clocks.some((clock) => clock.logBytes !== undefined)) await sleep(LOG_SETTLE_MS)
  return { result, bytes: clocks.map((clock, index) => (clock.logBytes?.() ?? Number.NaN) - (before[index] ?? Number.NaN)) }
}

/**
 * One autocannon run of `spec` on the server `clocks` reads (CPU µs and log bytes per
 * request); with `pause`, its window's requests are reported apart (Sample.window).
 */
export async function runLoad (spec: LoadSpec, settings: LoadSettings, clocks: ServerClocks = {}, pause?: Pause): Promise<Sample> {
  const { result, bytes } = await withLogBytes([clocks], async () => await measure(spec, settings, clocks, pause))
  return toSample([result], bytes[0])
}

/** A load to interleave with others: what to send, and the clocks of the server it goes to. */
export interface InterleavedLoad {
  spec: LoadSpec
  clocks?: ServerClocks
}

/**
 * Every load for `settings.durationSeconds` in all, in `slices` short runs each, taken in
 * turns (forwards, then backwards: A B C C B A A B C …), so that the machine's drift, which
 * here moves a load's rate by tens of percent within seconds, falls on all of them alike.
 * Each load's slices are merged into one Sample (responses over seconds, percentiles over
 * every response, CPU summed). bench/README.md has the A/A figures that chose the slicing.
 * The loads go to different servers, so each log reader's bytes are its own load's.
 */
export async function runInterleaved (loads: readonly InterleavedLoad[], settings: LoadSettings, slices: number): Promise<Sample[]> {
  const sliceSettings = { ...settings, durationSeconds: settings.durationSeconds / slices }
  const runs: RawRun[][] = loads.map(() => [])
  const { bytes } = await withLogBytes(loads.map((load) => load.clocks ?? {}), async () => {
    for (let slice = 0; slice < slices; slice++) {
      const order = loads.map((_, index) => slice % 2 === 0 ? index : loads.length - 1 - index)
      for (const index of order) {
        const load = loads[index]
        if (load !== undefined) runs[index]?.push(await measure(load.spec, sliceSettings, load.clocks))
      }
    }
  })
  return runs.map((loadRuns, index) => toSample(loadRuns, bytes[index]))
}

/**
 * `primary` measured while `background` runs (two autocannon instances at once, same
 * settings): the background starts `leadSeconds` earlier and ends as late after.
 */
export async function runUnderLoad (primary: LoadSpec, background: LoadSpec, settings: LoadSettings, leadSeconds: number): Promise<{ primary: Sample, background: Sample }> {
  const backgroundRun = runLoad(background, { ...settings, durationSeconds: settings.durationSeconds + 2 * leadSeconds })
  await sleep(leadSeconds * 1000)
  const primarySample = await runLoad(primary, settings)
  return { primary: primarySample, background: await backgroundRun }
}
