/*
 * The refresh grant of two builds side by side (issue 45): two services (`--before DIR` and
 * `--after DIR`, each a checkout with its dist/ built; the same DIR twice is the A/A check) on
 * one fresh database and the bench's Redis DB (BENCH_REDIS_URL, default …/5; keys under a
 * prefix per side), loaded in turns, ABBA, in short slices. Each side holds `--chains` refresh
 * tokens of one signed-in person (a code flow each, through bench/lib/oidc.ts), refreshed in a
 * closed loop, each answer's token the next request's. At a slice's end no new request is sent
 * and the slice's CPU (all threads, /proc/<pid>/stat) is read once its requests have all been
 * answered: so each side is charged its own refreshes only, and both sides share the machine's
 * drift (this VM's speed moves by tens of percent within seconds; bench/README.md, "Noise").
 *
 *   node --conditions=@auth-token-service/source --import @tapjs/typescript/import bench/oidc-refresh-ab.ts \
 *     --before /tmp/old-checkout --after . [--slices 24] [--slice-ms 600] [--chains 16] [--profile after]
 *
 * `--profile before|after` runs that side with --cpu-prof (into ./oidc-refresh-ab-profiles).
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { cpuSeconds, cpuSecondsByThread, startChild, type Child } from './lib/children.js'
import { createBenchDatabase, migrateWithCli } from './lib/fixture.js'
import { createPerson, registerClient, signedInBrowser } from './lib/oidc.js'
import { freePort } from '../support/processes.js'

const { values: args } = parseArgs({
  options: { before: { type: 'string' }, after: { type: 'string' }, slices: { type: 'string' }, 'slice-ms': { type: 'string' }, chains: { type: 'string' }, profile: { type: 'string' } }
})
const roots = { before: resolve(args.before ?? '.'), after: resolve(args.after ?? '.') }
const SLICES = Number(args.slices ?? 24)
const SLICE_MS = Number(args['slice-ms'] ?? 600)
const CHAINS = Number(args.chains ?? 16)
const PASSWORD = 'bench password long enough 1'
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/5'

interface Side {
  name: string
  child: Child
  chains: string[]
  authorization: string
  url: string
  cpu: number
  refreshes: number
  threads: Record<string, number>
  slices: number[]
}

async function startSide (name: 'before' | 'after', root: string, databaseUrl: string, sealingKey: string): Promise<Side> {
  const port = await freePort()
  const internalPort = await freePort()
  const adminKey = randomBytes(32).toString('base64url')
  const issuer = `http://127.0.0.1:${port}/oidc`
  const child = await startChild({
    name,
    script: `${root}/dist/cli/main.js`,
    args: ['serve'],
    port,
    readyPath: '/health/ready',
    nodeFlags: ['--min-semi-space-size=16', ...(args.profile === name ? ['--cpu-prof', '--cpu-prof-interval=200', '--cpu-prof-dir=oidc-refresh-ab-profiles'] : [])],
    env: {
      NODE_ENV: 'production',
      LOG_LEVEL: 'info',
      INTERNAL_PORT: String(internalPort),
      DATABASE_URL: databaseUrl,
      REDIS_URL,
      AUTH_REDIS_KEY_PREFIX: `{ab${name}}:`,
      AUTH_OIDC_ISSUER: issuer,
      AUTH_TOTP_KEY: sealingKey,
      AUTH_ADMIN_KEY: adminKey
    }
  })
  const internalOrigin = `http://127.0.0.1:${internalPort}`
  const person = { username: `ab.${name}`, password: PASSWORD }
  await createPerson(internalOrigin, adminKey, person.username, PASSWORD)
  const client = await registerClient(internalOrigin, adminKey, `ab-${name}`)
  const browser = signedInBrowser(child.origin, issuer, person)
  // The first flow signs in; the others are single sign-on and may run together.
  const chains = [(await browser.codeFlow(client)).refreshToken]
  chains.push(...await Promise.all(Array.from({ length: CHAINS - 1 }, async () => (await browser.codeFlow(client)).refreshToken)))
  const authorization = `Basic ${Buffer.from(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.secret)}`).toString('base64')}`
  return { name, child, chains, authorization, url: `${issuer}/token`, cpu: 0, refreshes: 0, threads: {}, slices: [] }
}

async function refresh (side: Side, chain: number): Promise<void> {
  const response = await fetch(side.url, {
    method: 'POST',
    headers: { authorization: side.authorization, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: side.chains[chain] ?? '' })
  })
  const body = await response.json() as { refresh_token?: unknown, id_token?: unknown }
  if (!response.ok || typeof body.refresh_token !== 'string' || typeof body.id_token !== 'string') throw new Error(`${side.name}: the refresh grant answered ${response.status}`)
  side.chains[chain] = body.refresh_token
}

async function slice (side: Side, record: boolean): Promise<void> {
  let stop = false
  let answered = 0
  const cpu = cpuSeconds(side.child.pid)
  const threads = cpuSecondsByThread(side.child.pid)
  const timer = setTimeout(() => { stop = true }, SLICE_MS)
  await Promise.all(side.chains.map(async (_token, chain) => {
    while (!stop) {
      await refresh(side, chain)
      answered++
    }
  }))
  clearTimeout(timer)
  if (!record) return
  const spent = cpuSeconds(side.child.pid) - cpu
  side.cpu += spent
  side.refreshes += answered
  side.slices.push(spent * 1e6 / answered)
  for (const [kind, seconds] of Object.entries(cpuSecondsByThread(side.child.pid))) side.threads[kind] = (side.threads[kind] ?? 0) + seconds - (threads[kind] ?? 0)
}

const database = await createBenchDatabase(process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test')
const sides: Side[] = []
try {
  await migrateWithCli(roots.after, database.url)
  const sealingKey = randomBytes(32).toString('base64')
  const before = await startSide('before', roots.before, database.url, sealingKey)
  sides.push(before)
  const after = await startSide('after', roots.after, database.url, sealingKey)
  sides.push(after)
  for (let warm = 0; warm < 3; warm++) {
    await slice(after, false)
    await slice(before, false)
  }
  const turns = [before, after, after, before]
  for (let s = 0; s < SLICES; s++) await slice(turns[s % 4] ?? before, true)
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN
  for (const side of [before, after]) {
    const perRefresh = side.cpu * 1e6 / side.refreshes
    const byThread = Object.entries(side.threads).map(([kind, seconds]) => `${kind} ${Math.round(seconds * 1e6 / side.refreshes)}`).join(', ')
    console.log(`${side.name}: ${side.refreshes} refreshes, ${Math.round(perRefresh)} µs CPU per refresh (${Math.round(1e6 / perRefresh)} per vCPU), median of slices ${Math.round(median(side.slices))}; by thread: ${byThread}`)
  }
  console.log(`after ÷ before, CPU per refresh: ${((after.cpu / after.refreshes) / (before.cpu / before.refreshes)).toFixed(3)}; ${SLICES} slices of ${SLICE_MS} ms, ${CHAINS} chains a side; load average at the end ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`)
} finally {
  for (const side of sides) await side.child.stop()
  await database.drop()
}
