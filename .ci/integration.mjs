// `npm run test:integration`: the test files that `npm test` leaves out, which are those under
// test/integration/ (package.json's `tap.exclude` is that one pattern): a file is in the
// integration set by where it lives, and no list names it. test/integration/cluster/ runs apart,
// one file at a time (each starts a 6-node Cluster of its own). Coverage is off here: the gate
// judges the fast suite's run (`npm run test:coverage`), and a subset of the suite is no measure of it.
//
// The timing and stall tests (test/integration/timing/: their subject is a duration, judged by
// paired ratios or by a stall bound) run apart too, one file at a time, so that nothing this
// script starts shares the machine with them: `--no-timing` leaves them out, `--timing-only` runs
// only them. CI runs the rest of the set on Node 24 (the project's), then on Node 22, with nothing
// CPU-bound beside it (its fault tests count requests and bound latency under a fault), then these.
//
//   node .ci/integration.mjs [--cluster-only | --no-cluster] [--timing-only | --no-timing] [--no-browser] [--no-faults] [tap options...]
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'

const INTEGRATION = 'test/integration'
/** Each Cluster file starts a Redis Cluster of its own. */
const CLUSTER = `${INTEGRATION}/cluster/`
/** Files whose subject is a duration (a latency ratio, an event-loop stall). */
const TIMING = `${INTEGRATION}/timing/`
/**
 * Files whose subject is a browser or a gateway (Chromium, nginx, Caddy running the shipped files in
 * front of the service; Apache's mod_auth_openidc signing in through the service's OpenID Connect
 * provider): `--no-browser` leaves them out. CI runs them on Node 24 only: what they
 * judge (the pages in Chromium, the gateways' configuration, the redirects) does not depend on the
 * runtime under the service, which the rest of the set runs on both; they are the set's heaviest
 * files (Chromium), and CI stays under 20 minutes.
 */
const BROWSER = [`${INTEGRATION}/browser/`, `${INTEGRATION}/gateways/`]
/**
 * Files whose subject is a backend's failure (Redis killed, paused, full or restarted, Postgres
 * stopped, a revocation racing Logins): `--no-faults` leaves them out. CI runs them on Node 24
 * only: what they judge is the service's answer to its backends, the same code on either runtime,
 * and they are the set's longest files after the browser's.
 */
const FAULTS = [`${INTEGRATION}/faults/`]

const { tap } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
if (JSON.stringify(tap.exclude) !== JSON.stringify([`${INTEGRATION}/**`])) {
  throw new Error(`package.json tap.exclude must be ["${INTEGRATION}/**"]: the fast suite leaves out what this script runs, and only that`)
}
/** Every test file of the set, as a path from the project's root, in a stable order. */
const files = readdirSync(INTEGRATION, { recursive: true })
  .map((path) => `${INTEGRATION}/${path}`)
  .filter((path) => path.endsWith('.test.ts'))
  .sort()
const under = (dirs) => (path) => [dirs].flat().some((dir) => path.startsWith(dir))

const FLAGS = ['--cluster-only', '--no-cluster', '--timing-only', '--no-timing', '--no-browser', '--no-faults']
const args = process.argv.slice(2)
const only = args.includes('--cluster-only')
const noCluster = args.includes('--no-cluster')
const timingOnly = args.includes('--timing-only')
const noTiming = args.includes('--no-timing')
const noBrowser = args.includes('--no-browser')
const noFaults = args.includes('--no-faults')
const passed = args.filter((arg) => !FLAGS.includes(arg))

/** tap from this checkout, on whatever `node` is first on PATH (the project's Node 24 under npm run; the Node 22 step puts its own first). */
function run (tapArgs) {
  console.log(`\n> tap ${tapArgs.join(' ')}`)
  // Files by name: tap does not apply `exclude` to what it is given.
  const { status, signal } = spawnSync('node_modules/.bin/tap', tapArgs, { stdio: 'inherit' })
  if (status !== 0) process.exit(status ?? (signal === null ? 1 : 2))
}

const cluster = files.filter(under(CLUSTER))
const timing = files.filter(under(TIMING))
const rest = files.filter((path) => !under([CLUSTER, TIMING])(path) && !(noBrowser && under(BROWSER)(path)) && !(noFaults && under(FAULTS)(path)))
// Ten minutes a file, not the fast suite's five: revocation-race took 224-305 s at a load of 13-17.
// Three files at a time, not the fast suite's four (package.json): the fault tests count requests
// and bound Logins' latency under a fault.
if (!only && !timingOnly) run(['--disable-coverage', '--timeout', '600', '--jobs', '3', ...passed, ...rest])
if (!only && !noTiming) run(['--disable-coverage', '--timeout', '600', '--jobs', '1', ...passed, ...timing])
if (!noCluster && !timingOnly) run(['--disable-coverage', '--jobs', '1', ...passed, ...cluster])
