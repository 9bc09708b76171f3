import { html, type Markup } from '../sign-in/index.js'
import type { HourlyLogins } from '../core/stores/audit-log.js'

/**
 * The dashboard: Logins per hour over the last 24 hours (successes and failures) drawn as a
 * bar chart in SVG on the server (no script, colours from the stylesheet: the CSP allows no
 * inline style), with the same numbers in a table beside it for screen readers and anyone
 * who prefers figures; and the number of active sessions.
 */

export const HOURS = 24
const HOUR_MS = 3_600_000

export interface DashboardView {
  /** Exactly HOURS buckets, oldest first, every hour present (zeros filled in). */
  hours: HourlyLogins[]
  activeSessions: number
}

/** The last `HOURS` hours up to the one `now` is in, each with its counts (zero where none). */
export function lastDayOfLogins (found: readonly HourlyLogins[], now: number): HourlyLogins[] {
  const current = Math.floor(now / HOUR_MS) * HOUR_MS
  const byHour = new Map(found.map((bucket) => [bucket.hour.getTime(), bucket]))
  return Array.from({ length: HOURS }, (_, i) => {
    const hour = current - (HOURS - 1 - i) * HOUR_MS
    const bucket = byHour.get(hour)
    return { hour: new Date(hour), successes: bucket?.successes ?? 0, failures: bucket?.failures ?? 0 }
  })
}

const hh = (at: Date): string => `${String(at.getUTCHours()).padStart(2, '0')}:00`

/** The axis's step: 1, 2 or 5 × a power of ten, so that four steps reach the highest count (whole numbers only). */
function axisStep (max: number): number {
  const wanted = Math.max(1, max / 4)
  const power = 10 ** Math.floor(Math.log10(wanted))
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= wanted) ?? 10 * power
}

function chart (hours: readonly HourlyLogins[]): Markup {
  const width = 720
  const height = 240
  const left = 44
  const bottom = 28
  const top = 12
  const plotHeight = height - bottom - top
  const step = axisStep(Math.max(0, ...hours.map((bucket) => Math.max(bucket.successes, bucket.failures))))
  const max = 4 * step
  const slot = (width - left - 8) / hours.length
  const bar = Math.max(2, Math.floor(slot / 2) - 2)
  const y = (value: number): number => top + plotHeight - (value / max) * plotHeight
  const ticks = [0, step, 2 * step, 3 * step, max]
  const grid = ticks.map((tick) => html`<g class="tick"><line x1="${left}" x2="${width - 4}" y1="${y(tick).toFixed(1)}" y2="${y(tick).toFixed(1)}"></line><text x="${left - 6}" y="${(y(tick) + 4).toFixed(1)}" text-anchor="end">${tick}</text></g>`)
  const bars = hours.map((bucket, i) => {
    const x = left + i * slot + 2
    // Every third hour labelled, counted from the current one (the hour one looks at first).
    const label = (hours.length - 1 - i) % 3 === 0 ? html`<text class="hour" x="${(x + bar).toFixed(1)}" y="${height - 8}" text-anchor="middle">${hh(bucket.hour)}</text>` : html``
    return html`<g><rect class="ok" x="${x.toFixed(1)}" y="${y(bucket.successes).toFixed(1)}" width="${bar}" height="${(top + plotHeight - y(bucket.successes)).toFixed(1)}"></rect><rect class="failed" x="${(x + bar + 1).toFixed(1)}" y="${y(bucket.failures).toFixed(1)}" width="${bar}" height="${(top + plotHeight - y(bucket.failures)).toFixed(1)}"></rect>${label}</g>`
  })
  const total = hours.reduce((sum, bucket) => sum + bucket.successes, 0)
  const failed = hours.reduce((sum, bucket) => sum + bucket.failures, 0)
  return html`<svg class="chart" id="logins-chart" viewBox="0 0 ${width} ${height}" role="img" aria-labelledby="chart-title chart-desc" xmlns="http://www.w3.org/2000/svg">
<title id="chart-title">Logins per hour, last 24 hours</title>
<desc id="chart-desc">${total} successful and ${failed} failed Logins; the table beside the chart gives each hour.</desc>
${grid}
<line class="axis" x1="${left}" x2="${left}" y1="${top}" y2="${top + plotHeight}"></line>
${bars}
</svg>`
}

function table (hours: readonly HourlyLogins[]): Markup {
  // Newest first: the hour one looks for is usually the last.
  const rows = [...hours].reverse().map((bucket) => html`<tr><th scope="row">${hh(bucket.hour)}</th><td>${bucket.successes}</td><td>${bucket.failures}</td></tr>`)
  return html`<div class="table-box tall" tabindex="0" role="region" aria-labelledby="logins-table-caption"><table id="logins-table">
<caption id="logins-table-caption">Logins per hour (UTC), newest first</caption>
<thead><tr><th scope="col">Hour</th><th scope="col">Succeeded</th><th scope="col">Failed</th></tr></thead>
<tbody>${rows}</tbody>
</table></div>`
}

export function dashboardBody (view: DashboardView): Markup {
  const successes = view.hours.reduce((sum, bucket) => sum + bucket.successes, 0)
  const failures = view.hours.reduce((sum, bucket) => sum + bucket.failures, 0)
  return html`<ul class="figures">
<li><span class="figure" id="active-sessions">${view.activeSessions}</span><span class="meta">active sessions</span></li>
<li><span class="figure" id="logins-ok">${successes}</span><span class="meta">successful Logins, 24 h</span></li>
<li><span class="figure" id="logins-failed">${failures}</span><span class="meta">failed Logins, 24 h</span></li>
</ul>
<section aria-labelledby="logins-heading">
<h2 id="logins-heading">Logins per hour</h2>
<p class="legend" aria-hidden="true"><span class="swatch ok"></span>Succeeded <span class="swatch failed"></span>Failed</p>
<div class="chart-row">
${chart(view.hours)}
${table(view.hours)}
</div>
</section>`
}
