/** The middle value (mean of the two middle ones for an even count); NaN for none. */
export function median (values: readonly number[]): number {
  const finite = values.filter((value) => Number.isFinite(value)).sort((a, b) => a - b)
  if (finite.length === 0) return Number.NaN
  const middle = Math.floor(finite.length / 2)
  return finite.length % 2 === 1 ? finite[middle] ?? Number.NaN : ((finite[middle - 1] ?? 0) + (finite[middle] ?? 0)) / 2
}

/** The nearest-rank percentile (0 < p <= 100) of values sorted ascending. */
export function percentile (sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)))
  return sorted[rank - 1] ?? Number.NaN
}
