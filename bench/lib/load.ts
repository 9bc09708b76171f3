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
}

/** What one autocannon run saw, before it is reduced to a Sample (runs can be merged first). */
interface RawRun {
  latencies: Float64Array
  statuses: Record<string, number>
  unexpected: number
  elapsedSeconds: number
  /** CPU seconds the server under load spent during the run; NaN when not known. */
  cpuSeconds: number
}

/**
 * One autocannon run. Latencies are recorded from autocannon's `response` events, in
 * fractional milliseconds, because its own histogram keeps whole milliseconds only,
 * too coarse for sub-millisecond answers.
 */
async function measure (spec: LoadSpec, settings: LoadSettings, cpuSeconds: () => number = () => Number.NaN): Promise<RawRun> {
  let latencies = new Float64Array(1 << 16)
  let count = 0
  const statuses: Record<string, number> = {}
  const expected = new Set(spec.expectedStatuses)
  let unexpected = 0
  const cpuBefore = cpuSeconds()
  const started = performance.now()
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
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (count === latencies.length) {
        const grown = new Float64Array(latencies.length * 2)
        grown.set(latencies)
        latencies = grown
      }
      latencies[count++] = responseTime
      statuses[statusCode] = (statuses[statusCode] ?? 0) + 1
      if (!expected.has(statusCode)) unexpected++
    })
  })
  const elapsedSeconds = (result.finish.getTime() - result.start.getTime()) / 1000 || (performance.now() - started) / 1000
  return {
    latencies: latencies.subarray(0, count),
    statuses,
    unexpected: unexpected + result.errors + result.timeouts,
    elapsedSeconds,
    cpuSeconds: cpuSeconds() - cpuBefore
  }
}

/** Several runs of one load as if they were one: responses and seconds summed, percentiles over every response. */
function toSample (runs: readonly RawRun[]): Sample {
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
  return {
    requestsPerSecond: responses / seconds,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    responses,
    unexpected: runs.reduce((sum, run) => sum + run.unexpected, 0),
    statuses,
    cpuMicrosPerRequest: runs.reduce((sum, run) => sum + run.cpuSeconds, 0) * 1e6 / responses
  }
}

/** One autocannon run of `spec`; `cpuSeconds` reads the server's CPU clock (for CPU µs per request). */
export async function runLoad (spec: LoadSpec, settings: LoadSettings, cpuSeconds?: () => number): Promise<Sample> {
  return toSample([await measure(spec, settings, cpuSeconds)])
}

/** A load to interleave with others: what to send, and the CPU clock of the server it goes to. */
export interface InterleavedLoad {
  spec: LoadSpec
  cpuSeconds?: () => number
}

/**
 * Every load for `settings.durationSeconds` in all, in `slices` short runs each, taken in
 * turns (forwards, then backwards: A B C C B A A B C …), so that the machine's drift, which
 * here moves a load's rate by tens of percent within seconds, falls on all of them alike.
 * Each load's slices are merged into one Sample (responses over seconds, percentiles over
 * every response, CPU summed). bench/README.md has the A/A figures that chose the slicing.
 */
export async function runInterleaved (loads: readonly InterleavedLoad[], settings: LoadSettings, slices: number): Promise<Sample[]> {
  const sliceSettings = { ...settings, durationSeconds: settings.durationSeconds / slices }
  const runs: RawRun[][] = loads.map(() => [])
  for (let slice = 0; slice < slices; slice++) {
    const order = loads.map((_, index) => slice % 2 === 0 ? index : loads.length - 1 - index)
    for (const index of order) {
      const load = loads[index]
      if (load !== undefined) runs[index]?.push(await measure(load.spec, sliceSettings, load.cpuSeconds))
    }
  }
  return runs.map(toSample)
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
