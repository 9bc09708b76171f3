import type { Machine } from './machine.js'
import type { LoadSettings, Sample } from './load.js'
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
  /** Median over rounds of (req/s ÷ requestsPerUnit) ÷ the baseline's req/s in the same round. */
  ratio: number | undefined
  /** Median over rounds of p99 ÷ the baseline's p99 in the same round. */
  p99Ratio: number | undefined
  unexpected: number
}

export interface TargetCheck {
  target: string
  pass: boolean | undefined
  detail: string
  /** The scenario ids it judges. */
  scenarios: string[]
  threshold?: number
  /** A threshold on the req/s ratio column: the chart draws it on those bars. */
  onRatio?: boolean
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
  /** Runs of other scenarios made right before each of these (per round, by scenario id). */
  paired?: Record<string, Sample[]> | undefined
}

/** Same-round quotient of two scenarios' figures, then the median over rounds. */
export function roundRatio (a: Sample[], b: Sample[], pick: (sample: Sample) => number, divideA = 1): number {
  return median(a.map((sample, round) => {
    const other = b[round]
    return other === undefined ? Number.NaN : pick(sample) / divideA / pick(other)
  }))
}

/** The runs to divide `entry` by: those made right before it when paired, else the round's own run of `id`. */
export function comparisonRuns (entry: { paired?: Record<string, Sample[]> | undefined }, id: string, standalone: Sample[] | undefined): Sample[] | undefined {
  return entry.paired?.[id] ?? standalone
}

export function summarize (all: ScenarioRuns[]): Row[] {
  const byId = new Map(all.map((entry) => [entry.id, entry]))
  return all.map((entry) => {
    const baseRuns = entry.baseline === undefined ? undefined : comparisonRuns(entry, entry.baseline, byId.get(entry.baseline)?.runs)
    const base = baseRuns === undefined ? undefined : { runs: baseRuns }
    const unit = entry.requestsPerUnit ?? 1
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
      ratio: base === undefined ? undefined : roundRatio(entry.runs, base.runs, (sample) => sample.requestsPerSecond, unit),
      p99Ratio: base === undefined ? undefined : roundRatio(entry.runs, base.runs, (sample) => sample.p99Ms),
      unexpected: entry.runs.reduce((sum, sample) => sum + sample.unexpected, 0)
    }
  })
}

const AUTHENTICATE_SOURCES = ['auth-path-get', 'auth-path-post', 'auth-query-get', 'auth-form-post', 'auth-cookie-get', 'auth-cookie-post']

const fixed = (value: number, digits = 2): string => Number.isFinite(value) ? value.toFixed(digits) : '—'

/** Every target of issue 6, judged on this run's figures; a target whose scenarios did not run is undecided. */
export function checkTargets (rows: Row[], memory: MemoryFigure | undefined): TargetCheck[] {
  const byId = new Map(rows.map((row) => [row.id, row]))
  const checks: TargetCheck[] = []

  const each = (target: string, ids: string[], threshold: number, atLeast: boolean, value: (row: Row) => number | undefined, onRatio = false): void => {
    const present = ids.flatMap((id) => { const row = byId.get(id); return row === undefined ? [] : [row] })
    if (present.length === 0) {
      checks.push({ target, pass: undefined, detail: 'not measured in this run', scenarios: ids, threshold })
      return
    }
    const values = present.map((row) => ({ id: row.id, value: value(row) ?? Number.NaN }))
    if (values.every((entry) => Number.isNaN(entry.value))) {
      checks.push({ target, pass: undefined, detail: 'its baseline was not measured in this run', scenarios: ids, threshold, onRatio })
      return
    }
    const good = (v: number): boolean => Number.isFinite(v) && (atLeast ? v >= threshold : v <= threshold)
    const score = (v: number): number => Number.isFinite(v) ? (atLeast ? v : -v) : -Infinity
    const worst = values.reduce((a, b) => score(b.value) < score(a.value) ? b : a)
    checks.push({
      target,
      pass: values.every((entry) => good(entry.value)),
      detail: values.length === 1
        ? fixed(values[0]?.value ?? Number.NaN)
        : `worst ${worst.id} ${fixed(worst.value)} (${values.map((entry) => `${entry.id.replace(/^auth-/, '')} ${fixed(entry.value)}`).join(', ')})`,
      scenarios: ids,
      threshold,
      onRatio
    })
  }

  each('Authenticate req/s ≥ 0.85 × the one-GET ceiling (each token source)', AUTHENTICATE_SOURCES, 0.85, true, (row) => row.ratio, true)
  each('Authenticate p99 ≤ 1.5 × the one-GET ceiling\'s p99 (each token source)', AUTHENTICATE_SOURCES, 1.5, false, (row) => row.p99Ratio)
  const jwt = byId.get('jwt')
  each('Authenticate req/s ≥ the @fastify/jwt peer (each token source)', jwt === undefined ? [] : AUTHENTICATE_SOURCES, 1, true,
    (row) => jwt === undefined ? undefined : roundRatio(row.runs, comparisonRuns(row, 'jwt', jwt.runs) ?? [], (sample) => sample.requestsPerSecond))
  each('Guarded route with a warm cache ≥ 0.90 × the bare route', ['guard-cached'], 0.9, true, (row) => row.ratio, true)
  each('Login ≥ 0.90 × raw argon2 verify throughput (same parameters and concurrency)', ['login-success'], 0.9, true, (row) => row.ratio, true)
  each('Authenticate p99 during a login storm ≤ 2 × its idle p99', ['auth-storm'], 2, false, (row) => row.p99Ratio)
  checks.push(memory === undefined
    ? { target: 'Redis memory ≤ 300 B per active token', pass: undefined, detail: 'not measured in this run', scenarios: [] }
    : { target: 'Redis memory ≤ 300 B per active token', pass: memory.bytesPerToken <= 300, detail: `${fixed(memory.bytesPerToken, 1)} B`, scenarios: [], threshold: 300 })
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
  const form = byId.get('auth-form-post')
  const formCeiling = form?.paired?.['one-get-form']
  if (form !== undefined && formCeiling !== undefined) {
    const againstForm = roundRatio(form.runs, formCeiling, (sample) => sample.requestsPerSecond)
    const body = roundRatio(formCeiling, form.paired?.['one-get'] ?? [], (sample) => sample.requestsPerSecond)
    notes.push(`Authenticate by form body ÷ the one-GET route taking the same form POST, in the same slices: ${fixed(againstForm)} req/s; ` +
      `that route's form POST ÷ its GET: ${fixed(body)} (the cost of a request body in Fastify and Node, which the one-GET ceiling does not pay)`)
  }
  const twin = byId.get('aa-one-get')
  if (twin?.ratio !== undefined) {
    const perRound = twin.runs.map((sample, round) => sample.requestsPerSecond / (twin.paired?.['one-get']?.[round]?.requestsPerSecond ?? Number.NaN))
    notes.push(`A/A check of the method: a second one-GET server ÷ one-get, measured like every paired ratio: ${fixed(twin.ratio)} req/s (rounds ${perRound.map((value) => fixed(value)).join(', ')}), p99 ${fixed(twin.p99Ratio ?? Number.NaN)}; identical code, so the distance from 1.00 is the noise this run's ratios carry, the handicap of a server the bench loads only now and then included (bench/README.md, "Noise")`)
  }
  return notes
}

const verdict = (pass: boolean | undefined): string => pass === undefined ? 'n/a ' : pass ? 'PASS' : 'FAIL'

function tableCells (row: Row): string[] {
  return [
    row.title,
    fixed(row.requestsPerSecond, 0),
    fixed(row.p50Ms),
    fixed(row.p99Ms),
    row.baseline ?? '—',
    row.ratio === undefined ? '—' : fixed(row.ratio),
    row.p99Ratio === undefined ? '—' : fixed(row.p99Ratio),
    fixed(row.cpuMicrosPerRequest, 0)
  ]
}

const HEADER = ['Scenario', 'req/s', 'p50 ms', 'p99 ms', 'baseline', 'ratio', 'p99 ×', 'CPU µs/req']

function machineLine (report: BenchReport): string {
  const { machine, settings } = report
  return `${machine.date} · ${machine.cores} cores (${machine.cpu}), ${machine.memoryGiB} GiB · ${machine.os} · Node ${machine.node} · ` +
    `Redis ${machine.redis} · PostgreSQL ${machine.postgres} · autocannon ${machine.autocannon} · load average at start ${machine.loadAverage.join(' / ')}\n` +
    `${settings.connections} connections, pipelining ${settings.pipelining}, ${settings.warmupSeconds} s warm-up, ` +
    `${settings.runs} × ${settings.durationSeconds} s runs per scenario (interleaved rounds${settings.slices === undefined ? '' : `; a scenario and its paired baselines in ${settings.slices} slices each, taken in turns`}), medians; whole bench ${Math.round(report.wallSeconds)} s${stolenText(report.stolen)}`
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

export function renderText (report: BenchReport): string {
  const cells = [HEADER, ...report.rows.map(tableCells)]
  const widths = HEADER.map((_, column) => Math.max(...cells.map((row) => (row[column] ?? '').length)))
  const line = (row: string[]): string => row.map((cell, column) => column === 0 || column === 4 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0)).join('  ')
  const suspect = report.rows.filter((row) => row.unexpected > 0).map((row) => `${row.id}: ${row.unexpected} unexpected answers or errors (${JSON.stringify(row.runs.map((sample) => sample.statuses))})`)
  return [
    machineLine(report),
    '',
    line(HEADER),
    ...cells.slice(1).map(line),
    '',
    ...memoryLines(report.memory),
    '',
    ...report.targets.map((check) => `${verdict(check.pass)}  ${check.target}: ${check.detail}`),
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
    row(HEADER.map((_, column) => column === 0 || column === 4 ? '---' : '---:')),
    ...report.rows.map((entry) => row(tableCells(entry))),
    '',
    ...memoryLines(report.memory),
    '',
    ...report.targets.map((check) => `- **${verdict(check.pass).trim()}** ${check.target}: ${check.detail}`),
    ...report.notes.map((note) => `- info: ${note}`),
    ''
  ].join('\n')
}

const escapeXml = (text: string): string => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')

/** A horizontal bar per scenario with a ratio; the target's threshold drawn on the bars it judges. */
export function renderSvg (report: BenchReport): string {
  const rows = report.rows.filter((row) => row.ratio !== undefined && Number.isFinite(row.ratio))
  const thresholds = new Map<string, { value: number, pass: boolean | undefined }>()
  for (const check of report.targets) {
    if (check.threshold === undefined || check.onRatio !== true) continue
    for (const id of check.scenarios) thresholds.set(id, { value: check.threshold, pass: check.pass })
  }
  const labelWidth = 260
  const barWidth = 420
  const rowHeight = 24
  const top = 54
  const max = Math.max(1.2, ...rows.map((row) => row.ratio ?? 0))
  const x = (ratio: number): number => labelWidth + (ratio / max) * barWidth
  const height = top + rows.length * rowHeight + 30
  const width = labelWidth + barWidth + 70
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">auth-token-service: req/s as a ratio of each scenario's baseline (same run)</text>`,
    `<text x="10" y="38" fill="#555">${escapeXml(`${report.machine.cores} cores · Node ${report.machine.node} · Redis ${report.machine.redis} · PostgreSQL ${report.machine.postgres} · ${report.machine.date.slice(0, 10)}`)}</text>`
  ]
  rows.forEach((row, index) => {
    const y = top + index * rowHeight
    const ratio = row.ratio ?? 0
    const target = thresholds.get(row.id)
    const color = target === undefined ? '#8a9bb0' : ratio >= target.value ? '#3b9c5a' : '#c94a3f'
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
    `<text x="${width - 10}" y="${height - 8}" text-anchor="end" fill="#555">black tick: the target · green: met · red: missed · grey: no target</text>`,
    '</svg>',
    ''
  )
  return parts.join('\n')
}
