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

/**
 * One autocannon run. Latencies are recorded from autocannon's `response` events, in
 * fractional milliseconds, because its own histogram keeps whole milliseconds only,
 * too coarse for sub-millisecond answers.
 */
export async function runLoad (spec: LoadSpec, settings: LoadSettings): Promise<Sample> {
  let latencies = new Float64Array(1 << 16)
  let count = 0
  const statuses: Record<string, number> = {}
  const expected = new Set(spec.expectedStatuses)
  let unexpected = 0
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
  const sorted = latencies.subarray(0, count).sort()
  return {
    requestsPerSecond: count / elapsedSeconds,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    responses: count,
    unexpected: unexpected + result.errors + result.timeouts,
    statuses,
    cpuMicrosPerRequest: Number.NaN
  }
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
