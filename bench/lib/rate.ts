import { performance } from 'node:perf_hooks'

/** Operations a second: `ops` calls of `work` (each given its index), `inFlight` of them at a time. */
export async function opsPerSecond (work: (i: number) => Promise<unknown>, ops: number, inFlight: number): Promise<number> {
  let next = 0
  const started = performance.now()
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < ops) await work(next++)
  }))
  return ops / ((performance.now() - started) / 1000)
}
