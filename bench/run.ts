import { existsSync, readFileSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import nodeArgon2 from 'argon2'
import { Redis } from 'ioredis'
import { loadConfig } from '../src/config.js'
import { createPasswordHasher } from '../src/lib/passwords.js'
import { generateToken, hashToken } from '../src/lib/tokens.js'
import { SERVING_V8_FLAGS } from '../src/lib/v8-tuning.js'
import { accountName } from './lib/accounts.js'
import { cpuSeconds, startChild, type Child } from './lib/children.js'
import { createBenchDatabase, migrateWithCli, seedAccounts, type BenchDatabase } from './lib/fixture.js'
import { runInterleaved, runLoad, runUnderLoad, type LoadSettings, type Sample } from './lib/load.js'
import { describeMachine } from './lib/machine.js'
import { measureTokenMemory, type MemoryFigure } from './lib/redis-memory.js'
import { checkTargets, compareBindings, renderMarkdown, renderSvg, renderText, summarize, type BenchReport, type ScenarioRuns } from './lib/report.js'
import { formatShare, readCpuTimes, stolenShare } from './lib/steal.js'
import { defineScenarios, type Binding, type Scenario, type ServerName } from './scenarios.js'

/*
 * npm run bench [-- --duration 1.8 --warmup 1 --runs 3 --slices 16 --connections 50 --tokens 100000 --only a,b --profile service --root DIR]
 * npm run bench:smoke   (on the dist/ there is: 1 s runs, no warm-up, one round, 10,000 tokens, results in a
 *                        temporary directory; CI runs it after npm test has built dist/)
 *
 * The service (dist/, production settings) and every baseline run as child processes on
 * 127.0.0.1; autocannon runs here with one set of settings for all. Every round runs every
 * scenario once, so a noisy minute hits a scenario and its baseline alike; ratios are taken
 * within a round, then the median over rounds is reported. The bench never fails on a
 * missed target: it prints PASS/FAIL.
 */

function packageRoot (): string {
  let dir = fileURLToPath(new URL('.', import.meta.url))
  for (;;) {
    const manifest = join(dir, 'package.json')
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'auth-token-service') return dir
    const parent = join(dir, '..')
    if (parent === dir) throw new Error('auth-token-service package.json not found above the bench')
    dir = parent
  }
}

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string' },
    warmup: { type: 'string' },
    runs: { type: 'string' },
    slices: { type: 'string' },
    connections: { type: 'string' },
    tokens: { type: 'string' },
    out: { type: 'string' },
    only: { type: 'string' },
    profile: { type: 'string' },
    root: { type: 'string' },
    smoke: { type: 'boolean', default: false }
  }
})

const smoke = args.smoke === true
const numberArg = (value: string | undefined, fallback: number, allowZero = false): number => {
  if (value === undefined) return fallback
  const parsed = Number(value)
  if (!Number.isFinite(parsed) || parsed < 0 || (parsed === 0 && !allowZero)) throw new Error(`not a positive number: ${value}`)
  return parsed
}
// Another checkout's dist/ may be measured with this bench (--root DIR), to compare two builds.
const ROOT = args.root ?? packageRoot()
const settings: LoadSettings & { runs: number, warmupSeconds: number, slices: number } = {
  connections: numberArg(args.connections, 50),
  pipelining: 1,
  // 1.8 s keeps the default run under five minutes on a slow or busy VM (2 s took 297-311 s).
  durationSeconds: numberArg(args.duration, smoke ? 1 : 1.8),
  timeoutSeconds: 10,
  runs: Math.round(numberArg(args.runs, smoke ? 1 : 3)),
  warmupSeconds: numberArg(args.warmup, smoke ? 0 : 1, true),
  slices: Math.max(1, Math.round(numberArg(args.slices, smoke ? 2 : 16)))
}
const tokenCount = Math.round(numberArg(args.tokens, smoke ? 10_000 : 100_000))
const outDir = args.out ?? (smoke ? join(tmpdir(), 'ats-bench-smoke') : join(ROOT, 'bench', 'results'))
const only = args.only === undefined ? undefined : new Set(args.only.split(','))
const STORM_LEAD_SECONDS = Math.min(1, settings.durationSeconds / 2)

const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/5'
const ADMIN_DATABASE_URL = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
// A prefix (and so a revocation channel: pub/sub ignores DB numbers) of the bench's own.
const KEY_PREFIX = '{atsbench}:'
const PASSWORD = 'correct-horse-battery-9'
/** The argon2 binding src/lib/passwords.ts uses, and the other one, run in a copy of the service for comparison. */
const SERVICE_BINDING: Binding = 'node-rs'
const OTHER_BINDING: Binding = 'argon2'
const ACCOUNTS = 10_000

/**
 * V8 shrinks a process's young generation while it idles and grows it again only over
 * seconds of load. The bench loads each server for a few seconds at a time, minutes apart,
 * so without a floor a server's figures depend on how recently it was loaded: an A/A twin
 * of one-get, loaded only in its own scenario, kept a 16 MB heap, freed 2-6 MB per
 * scavenge and cost 25-27 µs per request against one-get's 20-21 (bench/README.md, "Noise").
 * 16 MB per semi-space is what every server here grows to under sustained load.
 */
const BENCH_V8_FLAGS = ['--min-semi-space-size=16']

const compiled = (path: string): string => fileURLToPath(new URL(path, import.meta.url))
const benchStarted = performance.now()
const log = (message: string): void => { process.stderr.write(`bench [${((performance.now() - benchStarted) / 1000).toFixed(0).padStart(3)} s]: ${message}\n`) }

async function main (): Promise<void> {
  const startedAt = performance.now()
  if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) throw new Error('dist/ is missing: run `npm run build` (npm run bench does)')
  const children: Child[] = []
  let database: BenchDatabase | undefined
  const redis = new Redis(REDIS_URL)
  try {
    log(`Redis ${REDIS_URL} (flushed: the bench owns this DB), Postgres ${ADMIN_DATABASE_URL.replace(/\/\/[^@]*@/, '//')}`)
    await redis.flushdb()
    database = await createBenchDatabase(ADMIN_DATABASE_URL)
    const machine = await describeMachine(ROOT, REDIS_URL, database.url)
    await migrateWithCli(ROOT, database.url)

    const serviceEnv: Record<string, string> = {
      NODE_ENV: 'production',
      LOG_LEVEL: 'info',
      DATABASE_URL: database.url,
      REDIS_URL,
      AUTH_REDIS_KEY_PREFIX: KEY_PREFIX,
      // At their maxima, so the failure scenario measures failed logins rather than 429s.
      AUTH_MAX_FAILED_LOGINS: '100',
      AUTH_MAX_FAILED_LOGINS_PER_IP: '1000000'
    }
    // What the service will read, so the baselines hash at its parameters and concurrency.
    const config = loadConfig({ ...process.env, ...serviceEnv })
    const hasher = createPasswordHasher(config.argon2, config.hashing)
    const passwordHash = await hasher.hash(PASSWORD)
    // Every other account keeps a hash as node-argon2 0.45 stored it before any canonical
    // ordering (`m=..,p=..,t=..`): Logins then prove that such hashes keep working.
    const legacyHash = await nodeArgon2.hash(PASSWORD, { type: nodeArgon2.argon2id, ...config.argon2, hashLength: 32 })
    await seedAccounts(database.url, ACCOUNTS, [passwordHash, legacyHash])
    log(`database ${database.url.replace(/\/\/[^@]*@/, '//')}: migrated, ${ACCOUNTS} accounts; argon2id ${JSON.stringify(config.argon2)}, hash concurrency ${config.hashing.concurrency}`)

    const profiled = (name: string): string[] => args.profile?.split(',').includes(name) === true
      ? ['--cpu-prof', '--cpu-prof-interval=100', `--cpu-prof-dir=${join(outDir, 'profiles')}`]
      : []
    // Every baseline runs with the V8 flags the service sets for itself (src/lib/v8-tuning.ts), so
    // both sides of a ratio run on the same engine settings; and every server, the service too,
    // with the young generation's floor at the size each one reaches under sustained load.
    const start = async (name: string, script: string, env: Record<string, string>, readyPath: string, scriptArgs: string[] = []): Promise<Child> => {
      const engineFlags = [...BENCH_V8_FLAGS, ...(name === 'service' ? [] : SERVING_V8_FLAGS)]
      const child = await startChild({ name, script, args: scriptArgs, env, readyPath, nodeFlags: [...engineFlags, ...profiled(name)] })
      children.push(child)
      return child
    }

    const service = await start('service', join(ROOT, 'dist', 'cli', 'main.js'), serviceEnv, '/health/ready', ['serve'])
    const login = await fetch(`${service.origin}/auth/Login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ username: accountName(0), password: PASSWORD })
    })
    const { token } = await login.json() as { token?: string }
    if (login.status !== 200 || token === undefined) throw new Error(`the service refused the bench's Login: ${login.status}`)

    const argon2Env = { BENCH_HASH: passwordHash, BENCH_PASSWORD: PASSWORD, BENCH_CONCURRENCY: String(config.hashing.concurrency), BENCH_QUEUE_MAX: String(config.hashing.maxQueued) }
    const oneGetEnv = { BENCH_REDIS_URL: REDIS_URL, BENCH_KEY: `${KEY_PREFIX}t:${hashToken(token)}` }
    const [bare, oneGet, oneGetTwin, jwt, argon2, argon2NodeRs, ordersDirect, ordersCached, serviceOtherBinding] = await Promise.all([
      start('bare', compiled('./servers/bare.js'), {}, '/'),
      start('one-get', compiled('./servers/one-get.js'), oneGetEnv, '/'),
      start('one-get-twin', compiled('./servers/one-get.js'), oneGetEnv, '/'),
      start('jwt', compiled('./servers/jwt.js'), {}, '/token'),
      start('argon2', compiled('./servers/argon2-verify.js'), { ...argon2Env, BENCH_BINDING: 'argon2' }, '/health'),
      start('argon2-node-rs', compiled('./servers/argon2-verify.js'), { ...argon2Env, BENCH_BINDING: 'node-rs' }, '/health'),
      start('orders-direct', compiled('./servers/orders.js'), { BENCH_REDIS_URL: REDIS_URL, BENCH_KEY_PREFIX: KEY_PREFIX, BENCH_CACHE: 'off' }, '/health'),
      start('orders-cached', compiled('./servers/orders.js'), { BENCH_REDIS_URL: REDIS_URL, BENCH_KEY_PREFIX: KEY_PREFIX, BENCH_CACHE: 'on' }, '/health'),
      start('service-other-binding', compiled('./servers/service-with-binding.js'), { ...serviceEnv, BENCH_ROOT: ROOT, BENCH_BINDING: OTHER_BINDING }, '/health/ready')
    ])
    const { token: jwtToken } = await (await fetch(`${jwt.origin}/token`)).json() as { token: string }

    const allScenarios = defineScenarios({
      origins: { service: service.origin, bare: bare.origin, oneGet: oneGet.origin, oneGetTwin: oneGetTwin.origin, jwt: jwt.origin, argon2: argon2.origin, argon2NodeRs: argon2NodeRs.origin, ordersDirect: ordersDirect.origin, ordersCached: ordersCached.origin, serviceOtherBinding: serviceOtherBinding.origin },
      serviceBinding: SERVICE_BINDING,
      token,
      unknownToken: generateToken(),
      jwtToken,
      password: PASSWORD,
      accounts: ACCOUNTS
    })
    // The smoke run takes every scenario, the optional ones too, so that none of them can rot.
    const scenarios = allScenarios.filter((scenario) => only === undefined
      ? smoke || scenario.optional !== true
      : only.has(scenario.id) || (scenario.background !== undefined && only.has(scenario.background.id)))
    // A paired scenario runs only beside a selected one whose ratio it serves.
    const selectedIds = new Set(scenarios.map((scenario) => scenario.id))
    const partnersOf = (scenario: Scenario): Scenario[] => (scenario.paired ?? []).flatMap((id) => {
      const partner = allScenarios.find((candidate) => candidate.id === id)
      return partner !== undefined && selectedIds.has(id) ? [partner] : []
    })

    // Hashes of Logins that autocannon stopped waiting for still run: each scenario starts on empty queues.
    const hashQueues = [
      ...[service, serviceOtherBinding].map((server) => async () => Number(/^auth_password_hash_queue_depth (\d+)/m.exec(await (await fetch(`${server.origin}/metrics`)).text())?.[1] ?? Number.NaN)),
      ...[argon2, argon2NodeRs].map((server) => async () => (await (await fetch(`${server.origin}/health`)).json() as { depth: number }).depth)
    ]
    const quiesce = async (): Promise<void> => {
      const deadline = performance.now() + 60_000
      while ((await Promise.all(hashQueues.map(async (depth) => await depth()))).some((depth) => depth !== 0)) {
        if (performance.now() > deadline) throw new Error('the hash queues did not drain within 60 s')
        await sleep(50)
      }
    }

    const samples = new Map<string, Sample[]>()
    const record = (id: string, sample: Sample): void => { samples.set(id, [...samples.get(id) ?? [], sample]) }
    // scenario id -> partner id -> the partner's runs right before that scenario's, one per round
    const pairedSamples = new Map<string, Record<string, Sample[]>>()
    const recordPaired = (id: string, partner: string, sample: Sample): void => {
      const byPartner = pairedSamples.get(id) ?? {}
      byPartner[partner] = [...byPartner[partner] ?? [], sample]
      pairedSamples.set(id, byPartner)
    }
    const pids: Record<ServerName, number> = {
      service: service.pid, bare: bare.pid, oneGet: oneGet.pid, oneGetTwin: oneGetTwin.pid, jwt: jwt.pid, argon2: argon2.pid, argon2NodeRs: argon2NodeRs.pid, ordersDirect: ordersDirect.pid, ordersCached: ordersCached.pid, serviceOtherBinding: serviceOtherBinding.pid
    }
    const cpuClock = (scenario: Scenario) => () => cpuSeconds(pids[scenario.server])
    const runScenario = async (scenario: Scenario, durationSeconds: number): Promise<{ primary: Sample, background?: Sample }> => {
      const runSettings = { ...settings, durationSeconds }
      await quiesce()
      // Two loads on one server: its CPU time cannot be split between them.
      if (scenario.background !== undefined) return await runUnderLoad(scenario.load, scenario.background.load, runSettings, STORM_LEAD_SECONDS)
      return { primary: await runLoad(scenario.load, runSettings, cpuClock(scenario)) }
    }
    const logRun = (round: number, label: string, sample: Sample): void => {
      log(`round ${round} ${label}: ${Math.round(sample.requestsPerSecond)} req/s, p99 ${sample.p99Ms.toFixed(2)} ms, ${sample.cpuMicrosPerRequest.toFixed(0)} µs CPU/req${sample.unexpected > 0 ? `, ${sample.unexpected} unexpected ${JSON.stringify(sample.statuses)}` : ''}`)
    }

    log(`${scenarios.length} scenarios: warm-up ${settings.warmupSeconds} s each, then ${settings.runs} rounds of ${settings.durationSeconds} s each`)
    if (settings.warmupSeconds > 0) {
      for (const scenario of scenarios) await runScenario(scenario, settings.warmupSeconds)
    }
    const measuringFrom = readCpuTimes()
    const stolenByRound: number[] = []
    for (let round = 1; round <= settings.runs; round++) {
      const roundFrom = readCpuTimes()
      for (const scenario of scenarios) {
        const partners = partnersOf(scenario)
        if (scenario.background === undefined && partners.length > 0) {
          // The scenario and the baselines it is divided by, in short slices taken in turns.
          await quiesce()
          const [primary, ...beside] = await runInterleaved([scenario, ...partners].map((entry) => ({ spec: entry.load, cpuSeconds: cpuClock(entry) })), settings, settings.slices)
          if (primary === undefined) throw new Error(`no sample of ${scenario.id}`)
          partners.forEach((partner, index) => {
            const sample = beside[index]
            if (sample === undefined) return
            recordPaired(scenario.id, partner.id, sample)
            logRun(round, `${partner.id} (beside ${scenario.id})`, sample)
          })
          record(scenario.id, primary)
          logRun(round, scenario.id, primary)
          continue
        }
        // A storm cannot be sliced (its hash queues take seconds to fill and drain): its partners run right before it.
        for (const partner of partners) {
          const { primary } = await runScenario(partner, settings.durationSeconds)
          recordPaired(scenario.id, partner.id, primary)
          logRun(round, `${partner.id} (beside ${scenario.id})`, primary)
        }
        const { primary, background } = await runScenario(scenario, settings.durationSeconds)
        record(scenario.id, primary)
        if (scenario.background !== undefined && background !== undefined) record(scenario.background.id, background)
        logRun(round, scenario.id, primary)
      }
      const stolen = stolenShare(roundFrom, readCpuTimes())
      if (stolen !== undefined) {
        stolenByRound.push(stolen)
        log(`round ${round}: ${formatShare(stolen)} of the machine's CPU time stolen by the hypervisor`)
      }
    }
    const stolenInRun = stolenShare(measuringFrom, readCpuTimes())

    let memory: MemoryFigure | undefined
    if (only === undefined || only.has('memory')) {
      log(`Redis memory: issuing ${tokenCount} tokens`)
      memory = await measureTokenMemory({
        tokens: tokenCount,
        fallbackUrl: REDIS_URL,
        tokenTtlSeconds: config.tokenTtlSeconds,
        federatedTokenTtlSeconds: config.federatedTokenTtlSeconds,
        denyTtlSeconds: config.denyTtlSeconds
      })
    }

    const measured: ScenarioRuns[] = scenarios.flatMap((scenario) => [
      { id: scenario.id, title: scenario.title, group: scenario.group, baseline: scenario.baseline, requestsPerUnit: scenario.requestsPerUnit, runs: samples.get(scenario.id) ?? [], paired: pairedSamples.get(scenario.id) },
      ...(scenario.background === undefined
        ? []
        : [{ id: scenario.background.id, title: scenario.background.title, group: scenario.group, baseline: scenario.background.baseline, runs: samples.get(scenario.background.id) ?? [] }])
    ])
    const rows = summarize(measured)
    const report: BenchReport = {
      machine,
      settings,
      service: { ...serviceEnv, DATABASE_URL: '(a database of its own)', stdout: '/dev/null (access log on, written and discarded)', AUTH_HASH_CONCURRENCY: String(config.hashing.concurrency) },
      rows,
      targets: checkTargets(rows, memory),
      notes: compareBindings(rows),
      memory,
      ...(stolenInRun === undefined ? {} : { stolen: { run: stolenInRun, rounds: stolenByRound } }),
      wallSeconds: (performance.now() - startedAt) / 1000
    }
    const text = renderText(report)
    process.stdout.write(`\n${text}\n`)
    await mkdir(outDir, { recursive: true })
    await writeFile(join(outDir, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`)
    const markdown = renderMarkdown(report)
    await writeFile(join(outDir, 'latest.md'), markdown)
    await writeFile(join(outDir, 'latest.svg'), renderSvg(report))
    if (!smoke && args.out === undefined && only === undefined) await keepInReadme(markdown)
    log(`written to ${outDir}/latest.{json,md,svg}`)
    // Targets are reported, never enforced; a scenario that no longer gets its expected answers is a broken bench.
    const broken = rows.filter((row) => row.runs.length === 0 || row.runs.some((sample) => sample.responses === 0 || sample.unexpected * 2 > sample.responses))
    if (broken.length > 0) {
      log(`broken scenarios (most answers unexpected): ${broken.map((row) => row.id).join(', ')}`)
      process.exitCode = 1
    }
  } finally {
    await Promise.allSettled(children.map(async (child) => { await child.stop() }))
    redis.disconnect()
    await database?.drop().catch((error: unknown) => { log(`could not drop ${database?.url ?? ''}: ${String(error)}`) })
  }
}

const START = '<!-- latest-results:start -->'
const END = '<!-- latest-results:end -->'

/** bench/README.md keeps the latest full run's table between its markers. */
async function keepInReadme (markdown: string): Promise<void> {
  const path = join(ROOT, 'bench', 'README.md')
  const text = await readFile(path, 'utf8').catch(() => '')
  const from = text.indexOf(START)
  const to = text.indexOf(END)
  if (from < 0 || to < from) {
    log('bench/README.md has no latest-results markers: table not copied there')
    return
  }
  await writeFile(path, `${text.slice(0, from + START.length)}\n${markdown}\n${text.slice(to)}`)
}

await main()
