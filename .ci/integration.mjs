// `npm run test:integration`: the test files that `npm test` leaves out, found from the one list
// that leaves them out (package.json, `tap.exclude`), so that a file moved out of the fast suite
// cannot fall out of both. test/cluster/ runs apart, one file at a time (each starts a 6-node
// Cluster of its own). Coverage is off here: the gate judges the fast suite's run (`npm run test:coverage`), and a subset of the
// suite is no measure of it.
//
// The timing and stall tests (TIMING below: their subject is a duration, judged by paired ratios or
// by a stall bound) run apart too, one file at a time, so that nothing this script starts shares
// the machine with them: `--no-timing` leaves them out, `--timing-only` runs only them. CI runs
// the rest of the set on Node 24 (the project's), then on Node 22, with nothing CPU-bound beside it (its fault
// tests count requests and bound latency under a fault), then these.
//
//   node .ci/integration.mjs [--cluster-only | --no-cluster] [--timing-only | --no-timing] [--no-browser] [tap options...]
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'

const CLUSTER = 'test/cluster/*.test.ts'
/** Files whose subject is a duration (a latency ratio, an event-loop stall), each named in tap.exclude. */
const TIMING = [
  'test/security/timing.test.ts',
  'test/security/presignin-flood.test.ts',
  'test/security/hash-fairness.test.ts',
  'test/operations/log-pipe.test.ts',
  'test/logging/log-destination.test.ts'
]
/**
 * Files whose subject is a browser or a gateway (Chromium, nginx, Caddy running the shipped files in
 * front of the service): `--no-browser` leaves them out. CI runs them on Node 24 only: what they
 * judge (the pages in Chromium, the gateways' configuration, the redirects) does not depend on the
 * runtime under the service, which the rest of the set runs on both; they are the set's heaviest
 * files (Chromium), and CI stays under 20 minutes.
 */
const BROWSER = [
  'test/gateways/*.test.ts',
  'test/operations/docs-browser.test.ts',
  'test/security/cross-site-browser.test.ts'
]
const { tap } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
const excluded = tap.exclude ?? []
if (!excluded.includes(CLUSTER)) throw new Error(`package.json tap.exclude must hold ${CLUSTER}`)
for (const file of [...TIMING, ...BROWSER]) if (!excluded.includes(file)) throw new Error(`${file} must be named in package.json tap.exclude (what runs apart is left out of the rest by name)`)

const FLAGS = ['--cluster-only', '--no-cluster', '--timing-only', '--no-timing', '--no-browser']
const args = process.argv.slice(2)
const only = args.includes('--cluster-only')
const noCluster = args.includes('--no-cluster')
const timingOnly = args.includes('--timing-only')
const noTiming = args.includes('--no-timing')
const noBrowser = args.includes('--no-browser')
const passed = args.filter((arg) => !FLAGS.includes(arg))

/** tap from this checkout, on whatever `node` is first on PATH (the project's Node 24 under npm run; the Node 22 step puts its own first). */
function run (tapArgs) {
  console.log(`\n> tap ${tapArgs.join(' ')}`)
  // Quoted patterns: tap globs them itself, and does not apply `exclude` to what it is given.
  const { status, signal } = spawnSync('node_modules/.bin/tap', tapArgs, { stdio: 'inherit' })
  if (status !== 0) process.exit(status ?? (signal === null ? 1 : 2))
}

// Ten minutes a file, not the fast suite's five: revocation-race took 224-305 s at a load of 13-17.
const rest = excluded.filter((pattern) => pattern !== CLUSTER && !TIMING.includes(pattern) && !(noBrowser && BROWSER.includes(pattern)))
// Three files at a time, not the fast suite's four (package.json): the fault tests count requests
// and bound Logins' latency under a fault.
if (!only && !timingOnly) run(['--disable-coverage', '--timeout', '600', '--jobs', '3', ...passed, ...rest])
if (!only && !noTiming) run(['--disable-coverage', '--timeout', '600', '--jobs', '1', ...passed, ...TIMING])
if (!noCluster && !timingOnly) run(['--disable-coverage', '--jobs', '1', ...passed, CLUSTER])
