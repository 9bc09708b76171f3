// `npm run test:integration`: the test files that `npm test` leaves out, found from the one list
// that leaves them out (package.json, `tap.exclude`), so that a file moved out of the fast suite
// cannot fall out of both. test/cluster/ runs apart, one file at a time (each starts a 6-node
// Cluster of its own). Coverage is off here: the gate judges `npm test`'s run, and a subset of the
// suite is no measure of it.
//
//   node .ci/integration.mjs [--cluster-only | --no-cluster] [tap options...]
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'

const CLUSTER = 'test/cluster/*.test.ts'
const { tap } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
const excluded = tap.exclude ?? []
if (!excluded.includes(CLUSTER)) throw new Error(`package.json tap.exclude must hold ${CLUSTER}`)

const args = process.argv.slice(2)
const only = args.includes('--cluster-only')
const noCluster = args.includes('--no-cluster')
const passed = args.filter((arg) => arg !== '--cluster-only' && arg !== '--no-cluster')

/** tap from this checkout, on whatever `node` is first on PATH (the Node 24 step sets it). */
function run (tapArgs) {
  console.log(`\n> tap ${tapArgs.join(' ')}`)
  // Quoted patterns: tap globs them itself, and does not apply `exclude` to what it is given.
  const { status, signal } = spawnSync('node_modules/.bin/tap', tapArgs, { stdio: 'inherit' })
  if (status !== 0) process.exit(status ?? (signal === null ? 1 : 2))
}

// Ten minutes a file, not the fast suite's five: revocation-race took 224-305 s at a load of 13-17.
if (!only) run(['--disable-coverage', '--timeout', '600', ...passed, ...excluded.filter((pattern) => pattern !== CLUSTER)])
if (!noCluster) run(['--disable-coverage', '--jobs', '1', ...passed, CLUSTER])
