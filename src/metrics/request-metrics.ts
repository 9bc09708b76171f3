/**
 * Request counts and latencies by route, method and status, in Prometheus' text format.
 * Kept in plain arrays and written out at scrape time: prom-client's labelled `inc` and
 * `observe` validate and hash their labels on every call, which was a measurable share of
 * Authenticate's CPU. The output is what prom-client writes for a labelled Counter
 * (`http_requests_total`) and Histogram (`http_request_duration_seconds`).
 */

interface Series {
  readonly labels: string
  /** Per bucket, not cumulative; the last slot is above every bound. */
  readonly counts: number[]
  sum: number
  count: number
}

export interface RequestMetrics {
  observe (route: string, method: string, status: number, seconds: number): void
  /** Both metrics, HELP and TYPE lines included, ending with a newline. */
  exposition (): string
}

const escapeLabel = (value: string): string => value.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')

/** Prometheus' rendering of a float: `+Inf`, else JavaScript's shortest round-trip form. */
const number = (value: number): string => value === Infinity ? '+Inf' : String(value)

export function createRequestMetrics (names: { counter: string, histogram: string, counterHelp: string, histogramHelp: string }, buckets: readonly number[]): RequestMetrics {
  const bounds = [...buckets].sort((a, b) => a - b)
  // route -> method -> status -> series: three lookups, no key built per request.
  const byRoute = new Map<string, Map<string, Map<number, Series>>>()
  const all: Series[] = []

  const seriesFor = (route: string, method: string, status: number): Series => {
    let byMethod = byRoute.get(route)
    if (byMethod === undefined) byRoute.set(route, byMethod = new Map())
    let byStatus = byMethod.get(method)
    if (byStatus === undefined) byMethod.set(method, byStatus = new Map())
    let series = byStatus.get(status)
    if (series === undefined) {
      series = {
        labels: `route="${escapeLabel(route)}",method="${escapeLabel(method)}",status="${status}"`,
        counts: new Array<number>(bounds.length + 1).fill(0),
        sum: 0,
        count: 0
      }
      byStatus.set(status, series)
      all.push(series)
    }
    return series
  }

  return {
    observe (route, method, status, seconds) {
      const series = seriesFor(route, method, status)
      let slot = 0
      while (slot < bounds.length && seconds > (bounds[slot] as number)) slot++
      series.counts[slot] = (series.counts[slot] as number) + 1
      series.sum += seconds
      series.count++
    },
    exposition () {
      const lines = [
        `# HELP ${names.counter} ${names.counterHelp}`,
        `# TYPE ${names.counter} counter`
      ]
      for (const series of all) lines.push(`${names.counter}{${series.labels}} ${series.count}`)
      lines.push('', `# HELP ${names.histogram} ${names.histogramHelp}`, `# TYPE ${names.histogram} histogram`)
      for (const series of all) {
        let cumulative = 0
        bounds.forEach((bound, slot) => {
          cumulative += series.counts[slot] as number
          lines.push(`${names.histogram}_bucket{le="${number(bound)}",${series.labels}} ${cumulative}`)
        })
        lines.push(
          `${names.histogram}_bucket{le="+Inf",${series.labels}} ${series.count}`,
          `${names.histogram}_sum{${series.labels}} ${number(series.sum)}`,
          `${names.histogram}_count{${series.labels}} ${series.count}`
        )
      }
      return `${lines.join('\n')}\n`
    }
  }
}
