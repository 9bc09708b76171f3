import type { Machine } from './machine.js'
import type { LoadSettings, Sample, WindowStats } from './load.js'
import type { LogTotals } from './log-pipe.js'
import type { MemoryFigure } from './redis-memory.js'
import { formatShare } from './steal.js'
import { median } from './stats.js'

/** One scenario over every round: medians of its runs, and ratios to its baseline taken round by round. */
export interface Row {
  id: string
  title: string
  group: string
  baseline: string | undefined
  requestsPerUnit: number
  runs: Sample[]
  paired: Record<string, Sample[]> | undefined
  requestsPerSecond: number
  p50Ms: number
  p99Ms: number
  cpuMicrosPerRequest: number
  /** Medians over rounds of its CPU µs per request by kind of thread, when the scenario reads them (lib/children.ts cpuSecondsByThread). */
  cpuMicrosPerRequestByThread?: Record<string, number>
  /** Bytes its log reader received per response (servers that log); NaN otherwise. */
  logBytesPerRequest: number
  /** Median over rounds of (req/s ÷ requestsPerUnit) ÷ the baseline's req/s in the same round. */
  ratio: number | undefined
  /** Median over rounds of p99 ÷ the baseline's p99 in the same round. */
  p99Ratio: number | undefined
  /** Median over rounds of (CPU µs per request × requestsPerUnit) ÷ the baseline's, same round (same slices when paired). */
  cpuRatio: number | undefined
  /** A run with a window (log reader stopped): the requests sent in it, beside the same seconds of the baseline's run. */
  window?: WindowSummary
  unexpected: number
}

/**
 * Medians over rounds of a window's figures (lib/load.ts WindowStats), and of its baseline's
 * over the same seconds of the runs right before and right after it.
 */
export interface WindowSummary {
  stopped: boolean
  startSeconds: number
  seconds: number
  answered: number
  answeredPerSecond: number
  p99Ms: number
  maxMs: number
  /** The baseline's runs before and after, averaged within each round. */
  baselineAnsweredPerSecond: number
  baselineP99Ms: number
  /**
   * Median over rounds of p99 in the window ÷ the mean of the baseline's p99s over the same
   * seconds before and after; Infinity when nothing sent in the window was answered.
   */
  p99Ratio: number
  /** A/A of that comparison: the baseline's run after ÷ its run before, p99 over the same seconds (median over rounds). */
  aaP99Ratio: number
}

/** The key of a partner's runs made right after the scenario's (a stopped log reader: before and after). */
export const AFTER = ':after'

export interface TargetCheck {
  target: string
  /** The limit as the table prints it (`≤ 1.20`). */
  limit: string
  pass: boolean | undefined
  detail: string
  /** The worst measured value, and each scenario's. */
  value?: number
  values?: Record<string, number>
  /** The scenario ids it judges. */
  scenarios: string[]
  threshold?: number
  /** The same limit on the CPU ratio column (scenario ÷ baseline), which the chart draws. */
  cpuChartLimit?: number
}

export interface BenchReport {
  machine: Machine
  settings: LoadSettings & { runs: number, warmupSeconds: number, slices?: number }
  service: Record<string, string>
  rows: Row[]
  targets: TargetCheck[]
  /** Same-round comparisons that are not targets (the two argon2 bindings on the Login route). */
  notes: string[]
  memory: MemoryFigure | undefined
  /** What each logging server's log reader received over the whole bench (by server name). */
  logReaders?: Record<string, LogTotals>
  /** Share of the machine's CPU time the hypervisor gave to others while the rounds ran (Linux). */
  stolen?: { run: number, rounds: number[] }
  wallSeconds: number
}

export interface ScenarioRuns {
  id: string
  title: string
  group: string
  baseline?: string
  requestsPerUnit?: number
  /** One sample per round, in round order. */
  runs: Sample[]
  /** Runs of other scenarios made beside each of these (per round, by scenario id). */
  paired?: Record<string, Sample[]> | undefined
}

/** Same-round quotient of two scenarios' figures, then the median over rounds. */
export function roundRatio (a: Sample[], b: Sample[], pick: (sample: Sample) => number, divideA = 1): number {
  return median(a.map((sample, round) => {
    const other = b[round]
    return other === undefined ? Number.NaN : pick(sample) / divideA / pick(other)
  }))
}

/** The runs to divide `entry` by: those made beside it when paired, else the round's own run of `id`. */
export function comparisonRuns (entry: { paired?: Record<string, Sample[]> | undefined }, id: string, standalone: Sample[] | undefined): Sample[] | undefined {
  return entry.paired?.[id] ?? standalone
}

function summarizeWindow (runs: Sample[], before: Sample[] | undefined, after: Sample[] | undefined): WindowSummary | undefined {
  const windows = runs.flatMap((sample) => sample.window === undefined ? [] : [sample.window])
  if (windows.length === 0) return undefined
  const beforeWindows = (before ?? []).map((sample) => sample.window)
  const afterWindows = (after ?? []).map((sample) => sample.window)
  // Each round's baseline: the mean of its runs before and after (the one there is, when only one is).
  const baseline = (round: number, pick: (window: WindowStats) => number): number => {
    const values = [beforeWindows[round], afterWindows[round]].flatMap((window) => window === undefined ? [] : [pick(window)])
    return values.length === 0 ? Number.NaN : values.reduce((sum, value) => sum + value, 0) / values.length
  }
  const of = (pick: (window: WindowStats) => number): number => median(windows.map(pick))
  return {
    stopped: windows.some((window) => window.stopped),
    startSeconds: of((window) => window.startSeconds),
    seconds: of((window) => window.seconds),
    answered: of((window) => window.answered),
    answeredPerSecond: of((window) => window.answeredPerSecond),
    p99Ms: of((window) => window.p99Ms),
    maxMs: of((window) => window.maxMs),
    baselineAnsweredPerSecond: median(runs.map((_, round) => baseline(round, (window) => window.answeredPerSecond))),
    baselineP99Ms: median(runs.map((_, round) => baseline(round, (window) => window.p99Ms))),
    // A run whose window got no answer at all stalled for longer than the run: the worst case, not an unknown.
    p99Ratio: median(runs.map((sample, round) => sample.window === undefined
      ? Number.NaN
      : sample.window.answered === 0 ? Infinity : sample.window.p99Ms / baseline(round, (window) => window.p99Ms))),
    aaP99Ratio: median(runs.map((_, round) => (afterWindows[round]?.p99Ms ?? Number.NaN) / (beforeWindows[round]?.p99Ms ?? Number.NaN)))
  }
}

/** Medians over rounds of the CPU per request of each kind of thread, when every run has them. */
function byThread (runs: Sample[]): { cpuMicrosPerRequestByThread?: Record<string, number> } {
  if (runs.length === 0 || runs.some((sample) => sample.cpuMicrosPerRequestByThread === undefined)) return {}
  const kinds = [...new Set(runs.flatMap((sample) => Object.keys(sample.cpuMicrosPerRequestByThread ?? {})))]
  return { cpuMicrosPerRequestByThread: Object.fromEntries(kinds.map((kind) => [kind, median(runs.map((sample) => sample.cpuMicrosPerRequestByThread?.[kind] ?? 0))])) }
}

export function summarize (all: ScenarioRuns[]): Row[] {
  const byId = new Map(all.map((entry) => [entry.id, entry]))
  return all.map((entry) => {
    const base = entry.baseline === undefined ? undefined : comparisonRuns(entry, entry.baseline, byId.get(entry.baseline)?.runs)
    const unit = entry.requestsPerUnit ?? 1
    const window = summarizeWindow(entry.runs, base, entry.baseline === undefined ? undefined : entry.paired?.[`${entry.baseline}${AFTER}`])
    return {
      id: entry.id,
      title: entry.title,
      group: entry.group,
      baseline: entry.baseline,
      requestsPerUnit: unit,
      runs: entry.runs,
      paired: entry.paired,
      requestsPerSecond: median(entry.runs.map((sample) => sample.requestsPerSecond)),
      p50Ms: median(entry.runs.map((sample) => sample.p50Ms)),
      p99Ms: median(entry.runs.map((sample) => sample.p99Ms)),
      cpuMicrosPerRequest: median(entry.runs.map((sample) => sample.cpuMicrosPerRequest)),
      ...byThread(entry.runs),
      logBytesPerRequest: median(entry.runs.map((sample) => sample.logBytesPerRequest)),
      ratio: base === undefined ? undefined : roundRatio(entry.runs, base, (sample) => sample.requestsPerSecond, unit),
      p99Ratio: base === undefined ? undefined : roundRatio(entry.runs, base, (sample) => sample.p99Ms),
      cpuRatio: base === undefined ? undefined : roundRatio(entry.runs, base, (sample) => sample.cpuMicrosPerRequest, 1 / unit),
      ...(window === undefined ? {} : { window }),
      unexpected: entry.runs.reduce((sum, sample) => sum + sample.unexpected, 0)
    }
  })
}

export const AUTHENTICATE_SOURCES = ['auth-path-get', 'auth-path-post', 'auth-query-get', 'auth-form-post', 'auth-cookie-get', 'auth-cookie-post']
/** Forward-auth, held to Authenticate's targets against the one-GET route of its own request shape. */
export const VERIFY_SOURCES = ['verify-bearer']

/**
 * How far the p99 of the requests sent while the log reader was stopped may exceed the p99
 * over the same seconds of runs with the reader running, and still count as unchanged: the
 * noise of that comparison on this VM (one unsliced run against its neighbours, like the
 * storm's 2 ×; its A/A is printed beside it; bench/README.md, "The log pipe").
 */
export const READER_STOP_P99_LIMIT = 2

/** Login with webhooks on ÷ off, throughput and CPU per request alike: at most 5 % of either. */
export const WEBHOOKS_LOGIN_LIMIT = 0.95

/** Authenticate by key ÷ by token, CPU per request: within the A/A noise of a paired ratio (bench/README.md, "Noise"). */
export const KEY_CPU_LIMIT = 1.1

/** Authenticate with the idle timeout on ÷ off, CPU per request. */
export const IDLE_CPU_LIMIT = 1.3

/**
 * Refresh grants per second per vCPU of the service: ten times Keycloak's sizing (its guide gives
 * a vCPU per 120 refresh token requests per second), read as refreshes per CPU-second of the
 * service process (1e6 ÷ its CPU µs per refresh), Redis and Postgres apart, as Keycloak's database is.
 */
export const REFRESH_PER_VCPU_TARGET = 1200
const KEYCLOAK_REFRESH_PER_VCPU = 120

/** A row's CPU per request by kind of thread (medians over rounds), as a note says it. */
const threadText = (row: Row): string => row.cpuMicrosPerRequestByThread === undefined
  ? ''
  : ` (µs per refresh by thread: ${Object.entries(row.cpuMicrosPerRequestByThread).filter(([, micros]) => micros >= 0.5).sort((a, b) => b[1] - a[1]).map(([kind, micros]) => `${kind} ${fixed(micros, 0)}`).join(', ')}; the signature runs in libuv's pool)`

/** Refresh grants one CPU-second of the server answers. */
const perCpuSecond = (cpuMicrosPerRequest: number): number => 1e6 / cpuMicrosPerRequest

const fixed = (value: number, digits = 2): string => Number.isFinite(value) ? value.toFixed(digits) : value === Infinity ? '∞' : '—'

/** Every target (bench/README.md, "Targets"), judged on this run's figures; a target whose scenarios did not run is undecided. */
export function checkTargets (rows: Row[], memory: MemoryFigure | undefined): TargetCheck[] {
  const byId = new Map(rows.map((row) => [row.id, row]))
  const checks: TargetCheck[] = []

  const each = (target: string, ids: string[], threshold: number, atLeast: boolean, value: (row: Row) => number | undefined, cpuChartLimit?: number): void => {
    const limit = `${atLeast ? '≥' : '≤'} ${fixed(threshold)}`
    const present = ids.flatMap((id) => { const row = byId.get(id); return row === undefined ? [] : [row] })
    if (present.length === 0) {
      checks.push({ target, limit, pass: undefined, detail: 'not measured in this run', scenarios: ids, threshold })
      return
    }
    const values = present.map((row) => ({ id: row.id, value: value(row) ?? Number.NaN }))
    if (values.every((entry) => Number.isNaN(entry.value))) {
      checks.push({ target, limit, pass: undefined, detail: 'its baseline was not measured in this run', scenarios: ids, threshold })
      return
    }
    const good = (v: number): boolean => !Number.isNaN(v) && (atLeast ? v >= threshold : v <= threshold)
    // A value that rounds to the limit is shown with one more digit, so that its verdict reads right.
    const show = (v: number): string => fixed(v) === fixed(threshold) ? fixed(v, 3) : fixed(v)
    const score = (v: number): number => Number.isNaN(v) ? -Infinity : atLeast ? v : -v
    const worst = values.reduce((a, b) => score(b.value) < score(a.value) ? b : a)
    checks.push({
      target,
      limit,
      pass: values.every((entry) => good(entry.value)),
      detail: values.length === 1
        ? show(values[0]?.value ?? Number.NaN)
        : `worst ${worst.id.replace(/^auth-/, '')} ${show(worst.value)} (${values.map((entry) => `${entry.id.replace(/^auth-/, '')} ${show(entry.value)}`).join(', ')})`,
      value: worst.value,
      values: Object.fromEntries(values.map((entry) => [entry.id, entry.value])),
      scenarios: ids,
      threshold,
      ...(cpuChartLimit === undefined ? {} : { cpuChartLimit })
    })
  }
  const besideJwt = (row: Row, pick: (sample: Sample) => number): number | undefined => {
    const jwt = comparisonRuns(row, 'jwt', byId.get('jwt')?.runs)
    return jwt === undefined ? undefined : roundRatio(row.runs, jwt, pick)
  }

  each("Authenticate: CPU µs per request ÷ its same-shape ceiling's (each token source)", AUTHENTICATE_SOURCES, 1.2, false, (row) => row.cpuRatio, 1.2)
  each("Authenticate: p99 ÷ its same-shape ceiling's p99 (each token source)", AUTHENTICATE_SOURCES, 1.5, false, (row) => row.p99Ratio)
  each("Authenticate: req/s ÷ the @fastify/jwt peer's (each token source)", AUTHENTICATE_SOURCES, 1, true, (row) => besideJwt(row, (sample) => sample.requestsPerSecond))
  each("Forward-auth /auth/verify: CPU µs per request ÷ its same-shape ceiling's", VERIFY_SOURCES, 1.2, false, (row) => row.cpuRatio, 1.2)
  each("Forward-auth /auth/verify: p99 ÷ its same-shape ceiling's p99", VERIFY_SOURCES, 1.5, false, (row) => row.p99Ratio)
  each("Guarded route, warm cache: CPU µs per request of the same route unguarded ÷ the guarded route's", ['guard-cached'], 0.9, true, (row) => {
    const base = row.paired?.['orders-unguarded']
    return base === undefined ? undefined : roundRatio(base, row.runs, (sample) => sample.cpuMicrosPerRequest)
  }, 1 / 0.9)
  each("Login: req/s ÷ raw argon2id verify's (same parameters and concurrency)", ['login-success'], 0.9, true, (row) => row.ratio)
  // A key costs what a token costs; 1.10 is the A/A noise of a paired ratio on this VM (bench/README.md, "Noise").
  each('Authenticate by API key: CPU µs per request ÷ Authenticate by token\'s (query, GET, same slices)', ['auth-key'], KEY_CPU_LIMIT, false, (row) => {
    const token = row.paired?.['auth-query-get']
    return token === undefined ? undefined : roundRatio(row.runs, token, (sample) => sample.cpuMicrosPerRequest)
  })
  // The idle timeout's read of the idle key beside the token, and its touch at most once per slack.
  each('Authenticate with the idle timeout on: CPU µs per request ÷ off\'s (query, GET, same slices)', ['auth-idle'], IDLE_CPU_LIMIT, false, (row) => {
    const off = row.paired?.['auth-query-get']
    return off === undefined ? undefined : roundRatio(row.runs, off, (sample) => sample.cpuMicrosPerRequest)
  })
  // Webhooks on cost Login at most 5 % of its throughput, and of its CPU per request.
  each('Login with webhooks on: req/s ÷ webhooks off\'s (paired runs)', ['login-webhooks'], WEBHOOKS_LOGIN_LIMIT, true, (row) => {
    const off = row.paired?.['login-success']
    return off === undefined ? undefined : roundRatio(row.runs, off, (sample) => sample.requestsPerSecond)
  })
  each('Login with webhooks on: CPU µs per request of webhooks off ÷ on\'s (paired runs)', ['login-webhooks'], WEBHOOKS_LOGIN_LIMIT, true, (row) => {
    const off = row.paired?.['login-success']
    return off === undefined ? undefined : roundRatio(off, row.runs, (sample) => sample.cpuMicrosPerRequest)
  }, 1 / WEBHOOKS_LOGIN_LIMIT)
  const refresh = byId.get('oidc-refresh')
  if (refresh === undefined) {
    checks.push({ target: 'OpenID Connect refresh grant: refreshes per second per vCPU of the service', limit: `≥ ${REFRESH_PER_VCPU_TARGET}`, pass: undefined, detail: 'not measured in this run', scenarios: ['oidc-refresh'], threshold: REFRESH_PER_VCPU_TARGET })
  } else {
    const value = perCpuSecond(refresh.cpuMicrosPerRequest)
    checks.push({
      target: `OpenID Connect refresh grant: refreshes per second per vCPU of the service (1e6 ÷ its CPU µs per refresh; ${REFRESH_PER_VCPU_TARGET / KEYCLOAK_REFRESH_PER_VCPU} × Keycloak's ${KEYCLOAK_REFRESH_PER_VCPU})`,
      limit: `≥ ${REFRESH_PER_VCPU_TARGET}`,
      pass: Number.isFinite(value) ? value >= REFRESH_PER_VCPU_TARGET : undefined,
      detail: `${fixed(value, 0)} (${fixed(refresh.cpuMicrosPerRequest, 0)} µs per refresh, ${fixed(refresh.requestsPerSecond, 0)} req/s)`,
      value,
      scenarios: ['oidc-refresh'],
      threshold: REFRESH_PER_VCPU_TARGET
    })
  }
  each('Authenticate during a login storm: p99 ÷ its idle p99', ['auth-storm'], 2, false, (row) => row.p99Ratio)
  each('Authenticate with tracing on, every request sampled: CPU µs per request ÷ tracing off\'s', ['auth-traced'], TRACING_CPU_LIMIT, false, (row) => row.cpuRatio)
  each('Authenticate with its log reader stopped: p99 of the requests sent meanwhile ÷ p99 over the same seconds of the runs right before and after, reader running', ['auth-reader-stopped'], READER_STOP_P99_LIMIT, false, (row) => row.window?.p99Ratio)
  const stall = byId.get('auth-reader-stopped')?.window
  const stallCheck = checks.at(-1)
  if (stall !== undefined && stallCheck !== undefined) stallCheck.detail += ` (${fixed(stall.p99Ms)} against ${fixed(stall.baselineP99Ms)} ms; A/A, after ÷ before: ${fixed(stall.aaP99Ratio)})`
  checks.push(memory === undefined
    ? { target: 'Redis memory per active token (B)', limit: '≤ 300', pass: undefined, detail: 'not measured in this run', scenarios: [] }
    : { target: 'Redis memory per active token (B)', limit: '≤ 300', pass: memory.bytesPerToken <= 300, detail: `${fixed(memory.bytesPerToken, 1)} B`, value: memory.bytesPerToken, scenarios: [], threshold: 300 })
  return checks
}

/** Figures that inform a decision without being a target. */
export function compareBindings (rows: Row[]): string[] {
  const byId = new Map(rows.map((row) => [row.id, row]))
  const notes: string[] = []
  const own = byId.get('login-success')
  const other = byId.get('login-other-binding')
  if (own !== undefined && other !== undefined) {
    const ratio = roundRatio(other.runs, own.runs, (sample) => sample.requestsPerSecond)
    notes.push(`${other.title} ÷ the service's own Login, req/s in the same round: ${fixed(ratio)}`)
  }
  const stopped = byId.get('auth-reader-stopped')?.window
  if (stopped !== undefined) {
    notes.push(`auth-reader-stopped: its log reader stopped (SIGSTOP) from ${fixed(stopped.startSeconds)} s for ${fixed(stopped.seconds)} s, then resumed (SIGCONT): ` +
      `${fixed(stopped.answered, 0)} requests sent meanwhile were answered (${fixed(stopped.answeredPerSecond, 0)}/s, against ${fixed(stopped.baselineAnsweredPerSecond, 0)}/s over the same seconds of the runs before and after, reader running), ` +
      `p99 ${fixed(stopped.p99Ms)} ms against ${fixed(stopped.baselineP99Ms)} ms (× ${fixed(stopped.p99Ratio)}), max ${fixed(stopped.maxMs)} ms; ` +
      `A/A, the run after ÷ the run before: p99 × ${fixed(stopped.aaP99Ratio)} (medians over rounds; the noise bound is ${fixed(READER_STOP_P99_LIMIT)} ×, bench/README.md)`)
  }
  // Groups ride in the token's record: what 20 of them cost Authenticate, against an account in none, in the same slices.
  const grouped = byId.get('auth-groups')
  const ungrouped = grouped?.paired?.['auth-query-get']
  if (grouped !== undefined && ungrouped !== undefined) {
    const ratio = (pick: (sample: Sample) => number): string => fixed(roundRatio(grouped.runs, ungrouped, pick))
    notes.push(`${grouped.title} ÷ an account in none (auth-query-get), same slices: CPU µs per request ${ratio((sample) => sample.cpuMicrosPerRequest)}, ` +
      `p99 ${ratio((sample) => sample.p99Ms)}, req/s ${ratio((sample) => sample.requestsPerSecond)} (information, not a target; the A/A check below is its noise)`)
  }
  // An OpenID Connect access token is a token of the service: what Authenticate of one costs against a Login token's, same slices.
  const oidcToken = byId.get('auth-oidc')
  const loginToken = oidcToken?.paired?.['auth-query-get']
  if (oidcToken !== undefined && loginToken !== undefined) {
    const ratio = (pick: (sample: Sample) => number): string => fixed(roundRatio(oidcToken.runs, loginToken, pick))
    notes.push(`${oidcToken.title} ÷ a Login token's (auth-query-get), same slices: CPU µs per request ${ratio((sample) => sample.cpuMicrosPerRequest)}, ` +
      `p99 ${ratio((sample) => sample.p99Ms)}, req/s ${ratio((sample) => sample.requestsPerSecond)} (information, not a target; the A/A check below is its noise)`)
  }
  // The refresh grant's throughput, and what the ID token's signature costs it: ES256 on a copy of the service, RS256 in the run right before.
  const refresh = byId.get('oidc-refresh')
  if (refresh !== undefined) {
    const rounds = refresh.runs.map((sample) => fixed(perCpuSecond(sample.cpuMicrosPerRequest), 0)).join(', ')
    notes.push(`${refresh.title}: ${fixed(refresh.requestsPerSecond, 0)} req/s, ${fixed(refresh.cpuMicrosPerRequest, 0)} µs of the service's CPU per refresh, ` +
      `so ${fixed(perCpuSecond(refresh.cpuMicrosPerRequest), 0)} refreshes per second per vCPU (rounds ${rounds}) against ${REFRESH_PER_VCPU_TARGET} (${REFRESH_PER_VCPU_TARGET / KEYCLOAK_REFRESH_PER_VCPU} × Keycloak's ${KEYCLOAK_REFRESH_PER_VCPU}); Redis and Postgres work apart${threadText(refresh)}`)
  }
  const es256 = byId.get('oidc-refresh-es256')
  const rs256 = es256?.paired?.['oidc-refresh']
  if (es256 !== undefined && rs256 !== undefined) {
    const ratio = (pick: (sample: Sample) => number): string => fixed(roundRatio(es256.runs, rs256, pick))
    notes.push(`${es256.title}: ${fixed(es256.requestsPerSecond, 0)} req/s, ${fixed(es256.cpuMicrosPerRequest, 0)} µs per refresh, ${fixed(perCpuSecond(es256.cpuMicrosPerRequest), 0)} per vCPU${threadText(es256)}; ` +
      `÷ RS256 on the service, the run right before: CPU µs per request ${ratio((sample) => sample.cpuMicrosPerRequest)}, req/s ${ratio((sample) => sample.requestsPerSecond)} (two processes of one build: information)`)
  }
  // Beside the judge, not judged: what the same sources cost against the peer in CPU.
  const jwtCpu = AUTHENTICATE_SOURCES.flatMap((id) => {
    const row = byId.get(id)
    const jwt = row === undefined ? undefined : comparisonRuns(row, 'jwt', byId.get('jwt')?.runs)
    if (row === undefined || jwt === undefined) return []
    return [`${id.replace(/^auth-/, '')} ${fixed(roundRatio(row.runs, jwt, (sample) => sample.cpuMicrosPerRequest))}`]
  })
  if (jwtCpu.length > 0) notes.push(`Authenticate's CPU µs per request ÷ the @fastify/jwt peer's, same slices: ${jwtCpu.join(', ')}`)
  const twin = byId.get('aa-one-get')
  if (twin?.ratio !== undefined) {
    const perRound = twin.runs.map((sample, round) => sample.requestsPerSecond / (twin.paired?.['one-get']?.[round]?.requestsPerSecond ?? Number.NaN))
    notes.push(`A/A check of the method: a second one-GET server ÷ one-get, measured like every paired ratio: ${fixed(twin.ratio)} req/s (rounds ${perRound.map((value) => fixed(value)).join(', ')}), CPU µs per request ${fixed(twin.cpuRatio ?? Number.NaN)}, p99 ${fixed(twin.p99Ratio ?? Number.NaN)}; identical code, so the distance from 1.00 is the noise this run's ratios carry, the handicap of a server the bench loads only now and then included (bench/README.md, "Noise")`)
  }
  return notes
}

/** What each log reader received: one access line per answered request, the start-up lines besides. */
/** What tracing every request may cost Authenticate, CPU per request on ÷ off (bench/README.md, "Tracing's cost"). */
export const TRACING_CPU_LIMIT = 1.5

/**
 * What the sink received from the traced service, against the requests it answered (its log
 * reader's lines: one access line each, a few start-up lines more). A request span per
 * request answered says that the spans were not only made but exported, none dropped by the
 * batch processor's full queue (OTEL_BSP_MAX_QUEUE_SIZE). Authenticate's Redis reads are
 * batched across requests (core/stores/redis/batched-find.ts): one Redis span per batch.
 */
export function tracingNote (exported: { requests: number, bytes: number, spans: number, serverSpans: number }, answered: number | undefined): string {
  const share = answered === undefined || answered === 0 ? '' : `, for ${answered} lines of its access log (request spans ÷ lines: ${(exported.serverSpans / answered).toFixed(3)})`
  return `service-traced exported ${exported.spans} spans, ${exported.serverSpans} of them request spans, in ${exported.requests} OTLP requests (${(exported.bytes / 2 ** 20).toFixed(1)} MiB) to the sink${share}`
}

export function logNotes (totals: Record<string, LogTotals>): string[] {
  return Object.entries(totals).map(([name, { bytes, lines }]) => `the log reader of ${name} received ${lines} line${lines === 1 ? '' : 's'} (${(bytes / 2 ** 20).toFixed(1)} MiB) from its stdout pipe over the whole bench`)
}

const verdict = (pass: boolean | undefined): string => pass === undefined ? 'n/a ' : pass ? 'PASS' : 'FAIL'

function tableCells (row: Row): string[] {
  return [
    row.title,
    fixed(row.requestsPerSecond, 0),
    fixed(row.p50Ms),
    fixed(row.p99Ms),
    fixed(row.cpuMicrosPerRequest, 0),
    fixed(row.logBytesPerRequest, 0),
    row.baseline ?? '—',
    row.cpuRatio === undefined ? '—' : fixed(row.cpuRatio),
    row.ratio === undefined ? '—' : fixed(row.ratio),
    row.p99Ratio === undefined ? '—' : fixed(row.p99Ratio)
  ]
}

const HEADER = ['Scenario', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'log B/req', 'baseline', 'CPU ×', 'req/s ×', 'p99 ×']
const LEFT = new Set([0, 6])

function machineLine (report: BenchReport): string {
  const { machine, settings } = report
  return `${machine.date} · ${machine.cores} cores (${machine.cpu}), ${machine.memoryGiB} GiB · ${machine.os} · Node ${machine.node} · ` +
    `Redis ${machine.redis} · PostgreSQL ${machine.postgres} · autocannon ${machine.autocannon} · load average at start ${machine.loadAverage.join(' / ')}\n` +
    `${settings.connections} connections, pipelining ${settings.pipelining}, ${settings.warmupSeconds} s warm-up, ` +
    `${settings.runs} × ${settings.durationSeconds} s runs per scenario (interleaved rounds${settings.slices === undefined ? '' : `; a scenario and its paired baselines in ${settings.slices} slices each, taken in turns`}), medians; ` +
    `the service logs at info to a pipe a reader process drains; whole bench ${Math.round(report.wallSeconds)} s${stolenText(report.stolen)}`
}

/** A busy neighbour on the VM's host: every figure of the run moved with it. */
function stolenText (stolen: BenchReport['stolen']): string {
  if (stolen === undefined) return ''
  return `; CPU time stolen by the hypervisor while the rounds ran ${formatShare(stolen.run)} (rounds ${stolen.rounds.map(formatShare).join(', ')})`
}

function memoryLines (memory: MemoryFigure | undefined): string[] {
  if (memory === undefined) return []
  return [
    `Redis memory: ${memory.bytesPerToken.toFixed(1)} B per active token (${memory.tokens} tokens of ${memory.accounts} accounts, ` +
      `${memory.denied} more logged out into the deny set; used_memory ${memory.usedMemoryBefore} → ${memory.usedMemoryAfter}; ` +
      `MEMORY USAGE per token: token key ${memory.tokenKeysPerToken.toFixed(1)} B, account index ${memory.indexPerToken.toFixed(1)} B (${memory.indexEncoding}), ` +
      `deny set ${memory.denySetPerToken.toFixed(2)} B; Redis ${memory.redisVersion}, ${memory.where})`
  ]
}

const TARGET_HEADER = ['Target', 'limit', 'measured', 'verdict']
const targetCells = (check: TargetCheck): string[] => [check.target, check.limit, check.detail, verdict(check.pass).trim()]

/** Plain text, columns padded; `left` columns are aligned left, the others right. */
function textTable (header: string[], body: string[][], left: Set<number>): string[] {
  const cells = [header, ...body]
  const widths = header.map((_, column) => Math.max(...cells.map((row) => (row[column] ?? '').length)))
  return cells.map((row) => row.map((cell, column) => left.has(column) ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0)).join('  ').trimEnd())
}

export function renderText (report: BenchReport): string {
  const suspect = report.rows.filter((row) => row.unexpected > 0).map((row) => `${row.id}: ${row.unexpected} unexpected answers or errors (${JSON.stringify(row.runs.map((sample) => sample.statuses))})`)
  return [
    machineLine(report),
    '',
    ...textTable(HEADER, report.rows.map(tableCells), LEFT),
    '',
    ...memoryLines(report.memory),
    '',
    ...textTable(['', 'Target', 'limit', 'measured'], report.targets.map((check) => [verdict(check.pass), check.target, check.limit, check.detail]), new Set([0, 1, 3])),
    '',
    ...report.notes.map((note) => `info  ${note}`),
    ...(suspect.length === 0 ? [] : ['', 'Suspect runs:', ...suspect])
  ].join('\n')
}

export function renderMarkdown (report: BenchReport): string {
  const row = (cells: string[]): string => `| ${cells.map((cell) => cell.replaceAll('|', '\\|')).join(' | ')} |`
  return [
    machineLine(report).split('\n').map((text) => `${text}  `).join('\n'),
    '',
    row(HEADER),
    row(HEADER.map((_, column) => LEFT.has(column) ? '---' : '---:')),
    ...report.rows.map((entry) => row(tableCells(entry))),
    '',
    ...memoryLines(report.memory),
    '',
    row(TARGET_HEADER),
    row(['---', '---', '---', '---']),
    ...report.targets.map((check) => row(targetCells(check).map((cell, column) => column === 3 ? `**${cell}**` : cell))),
    '',
    ...report.notes.map((note) => `- info: ${note}`),
    ''
  ].join('\n')
}

const escapeXml = (text: string): string => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')

/**
 * A horizontal bar per scenario: its CPU µs per request as a multiple of its baseline's (the
 * judge: a shorter bar is cheaper); a target's limit on that ratio drawn on the bars it judges.
 */
export function renderSvg (report: BenchReport): string {
  const rows = report.rows.filter((row) => row.cpuRatio !== undefined && Number.isFinite(row.cpuRatio))
  const thresholds = new Map<string, { value: number, pass: boolean | undefined }>()
  for (const check of report.targets) {
    if (check.cpuChartLimit === undefined) continue
    for (const id of check.scenarios) thresholds.set(id, { value: check.cpuChartLimit, pass: check.pass })
  }
  const labelWidth = 260
  const barWidth = 420
  const rowHeight = 24
  const top = 54
  const max = Math.max(1.3, ...rows.map((row) => row.cpuRatio ?? 0))
  const x = (ratio: number): number => labelWidth + (ratio / max) * barWidth
  const height = top + rows.length * rowHeight + 30
  const width = labelWidth + barWidth + 70
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    '<text x="10" y="20" font-size="14" font-weight="bold">auth-token-service: CPU µs per request ÷ the baseline\'s (same slices; shorter is cheaper)</text>',
    `<text x="10" y="38" fill="#555">${escapeXml(`${report.machine.cores} cores · Node ${report.machine.node} · Redis ${report.machine.redis} · PostgreSQL ${report.machine.postgres} · ${report.machine.date.slice(0, 10)}`)}</text>`
  ]
  rows.forEach((row, index) => {
    const y = top + index * rowHeight
    const ratio = row.cpuRatio ?? 0
    const target = thresholds.get(row.id)
    const color = target === undefined ? '#8a9bb0' : ratio <= target.value ? '#3b9c5a' : '#c94a3f'
    parts.push(
      `<text x="${labelWidth - 8}" y="${y + 15}" text-anchor="end">${escapeXml(`${row.id} ÷ ${row.baseline ?? ''}`)}</text>`,
      `<rect x="${labelWidth}" y="${y + 4}" width="${Math.max(1, x(ratio) - labelWidth).toFixed(1)}" height="${rowHeight - 8}" fill="${color}"/>`,
      `<text x="${(x(ratio) + 4).toFixed(1)}" y="${y + 15}">${ratio.toFixed(2)}</text>`
    )
    if (target !== undefined) {
      parts.push(`<line x1="${x(target.value).toFixed(1)}" x2="${x(target.value).toFixed(1)}" y1="${y + 1}" y2="${y + rowHeight - 1}" stroke="#000" stroke-width="2"/>`)
    }
  })
  const one = x(1).toFixed(1)
  parts.push(
    `<line x1="${one}" x2="${one}" y1="${top - 4}" y2="${top + rows.length * rowHeight}" stroke="#000" stroke-dasharray="3 3"/>`,
    `<text x="${one}" y="${top + rows.length * rowHeight + 16}" text-anchor="middle">1.0</text>`,
    `<text x="${labelWidth}" y="${top + rows.length * rowHeight + 16}" text-anchor="middle">0</text>`,
    `<text x="${width - 10}" y="${height - 8}" text-anchor="end" fill="#555">black tick: the target's limit · green: met · red: missed · grey: no CPU target</text>`,
    '</svg>',
    ''
  )
  return parts.join('\n')
}
