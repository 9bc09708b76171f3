import { setFlagsFromString } from 'node:v8'

/** The V8 flags the service sets for itself before it serves (`node dist/cli/main.js serve` needs no extra flag). */
export const SERVING_V8_FLAGS = ['--no-allocation-site-pretenuring'] as const

/**
 * Allocation-site pretenuring off. V8 may judge from one scavenge, taken while many
 * requests' objects happen to be alive, that the objects of an allocation site live long,
 * and allocate them in the old generation from then on. Every per-request object of this
 * service dies young, so that judgement is wrong, and it stays for the life of the process:
 * measured here (bench/README.md, "Noise: what the A/A check found") about one
 * process in ten of identical one-GET servers used 25-35 % more CPU per request at twice
 * the p99, every scavenge promoting megabytes and a mark-compact every few seconds; with
 * pretenuring off, none of 102 did. The flag is read when V8 reviews its allocation sites
 * (at each scavenge), so setting it at start-up, before the first request, is in time.
 */
export function tuneV8ForServing (): void {
  for (const flag of SERVING_V8_FLAGS) setFlagsFromString(flag)
}
