import { readFileSync } from 'node:fs'

/** The machine's CPU time so far, in clock ticks, from the `cpu` line of /proc/stat (Linux only). */
export interface CpuTimes {
  steal: number
  total: number
}

/**
 * On a VM, time the hypervisor gave this machine's virtual CPUs to someone else ("steal"). A
 * busy neighbour shows here, while every figure of the run moves with it; undefined off Linux.
 */
export function readCpuTimes (path = '/proc/stat'): CpuTimes | undefined {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch {
    return undefined
  }
  const line = /^cpu\s+([\d\s]+)$/m.exec(text)?.[1]
  if (line === undefined) return undefined
  // user nice system idle iowait irq softirq steal (guest time is already counted in user)
  const ticks = line.trim().split(/\s+/).slice(0, 8).map(Number)
  return { steal: ticks[7] ?? 0, total: ticks.reduce((sum, value) => sum + value, 0) }
}

/** The share of the machine's CPU time stolen between two readings (0-1), or undefined. */
export function stolenShare (from: CpuTimes | undefined, to: CpuTimes | undefined): number | undefined {
  if (from === undefined || to === undefined || to.total <= from.total) return undefined
  return (to.steal - from.steal) / (to.total - from.total)
}

/** A share (0-1) as the bench prints it: `12.3 %`. */
export function formatShare (share: number): string {
  return `${(share * 100).toFixed(1)} %`
}
