import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { keyLayout } from '@auth-token-service/protocol/layout'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import nodeArgon2 from 'argon2'
import { Redis } from 'ioredis'
import { loadConfig } from '../src/config/config.js'
import { createPasswordHasher } from '../src/passwords/hasher.js'
import { generateToken, hashToken } from '@auth-token-service/protocol/token'
import { SERVING_V8_FLAGS } from '../src/app/v8-tuning.js'
import { accountName } from './lib/accounts.js'
import { cpuSeconds, cpuSecondsByThread, startChild, type Child } from './lib/children.js'
import { freePort } from '../support/processes.js'
import { createBenchDatabase, migrateWithCli, seedAccounts, type BenchDatabase } from './lib/fixture.js'
import { runInterleaved, runLoad, runUnderLoad, type LoadSettings, type Pause, type Sample, type ServerClocks } from './lib/load.js'
import { openLogPipe, type LogReader, type LogTotals } from './lib/log-pipe.js'
import { describeMachine } from './lib/machine.js'
import { measureTokenMemory, type MemoryFigure } from './lib/redis-memory.js'
import { createPerson, refreshPool, registerClient, signedInBrowser, type BenchClient, type Browser } from './lib/oidc.js'
import { AFTER, checkTargets, compareBindings, logNotes, renderMarkdown, renderSvg, renderText, summarize, tracingNote, type BenchReport, type ScenarioRuns } from './lib/report.js'
import { formatShare, readCpuTimes, stolenShare } from './lib/steal.js'
import { defineScenarios, type Binding, type RefreshLoad, type Scenario, type ServerName } from './scenarios.js'

/*
 * npm run bench [-- --duration 1.8 --warmup 1 --runs 3 --slices 16 --connections 50 --tokens 100000 --only a,b --profile service --root DIR]
 * npm run bench:smoke   (on the dist/ there is: 0.5 s runs (1 s for hashing and the stopped log reader), 10
 *                        connections, no warm-up, one round, 10,000 tokens, results in a temporary directory; CI runs it after npm test
 *                        has built dist/)
 *
 * The service (dist/, production settings, its log on stdout to a pipe a reader process
 * drains) and every baseline run as child processes on 127.0.0.1; autocannon runs here with
 * one set of settings for all. Every round runs every
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
  // The smoke run only proves that every scenario still gets its answers: 10 connections
  // drain the Login queues between scenarios in a fifth of the time 50 take.
  connections: numberArg(args.connections, smoke ? 10 : 50),
  pipelining: 1,
  // 1.8 s keeps the default run under five minutes on a slow or busy VM (2 s took 297-311 s).
  durationSeconds: numberArg(args.duration, smoke ? 0.5 : 1.8),
  timeoutSeconds: 10,
  runs: Math.round(numberArg(args.runs, smoke ? 1 : 3)),
  warmupSeconds: numberArg(args.warmup, smoke ? 0 : 1, true),
  slices: Math.max(1, Math.round(numberArg(args.slices, smoke ? 2 : 16)))
}
const tokenCount = Math.round(numberArg(args.tokens, smoke ? 10_000 : 100_000))
const only = args.only === undefined ? undefined : new Set(args.only.split(','))
// bench/results/ holds the last whole run, committed with the code it measured: a smoke run or a
// part of the bench (--only) writes to the temp directory, unless --out says where.
const outDir = args.out ?? (smoke ? join(tmpdir(), 'ats-bench-smoke') : only !== undefined ? join(tmpdir(), 'ats-bench-only') : join(ROOT, 'bench', 'results'))
const STORM_LEAD_SECONDS = Math.min(1, settings.durationSeconds / 2)

const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/5'
const ADMIN_DATABASE_URL = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
// A prefix (and so a revocation channel: pub/sub ignores DB numbers) of the bench's own.
const KEY_PREFIX = '{atsbench}:'
const PASSWORD = 'correct-horse-battery-9'
/** The argon2 binding src/passwords/hasher.ts uses, and the other one, run in a copy of the service for comparison. */
const SERVICE_BINDING: Binding = 'node-rs'
const OTHER_BINDING: Binding = 'argon2'
const ACCOUNTS = 10_000
/** Twenty groups named as an organisation names them (9-12 characters), for the `auth-groups` row's account. */
const BENCH_GROUPS = ['engineering', 'ops-oncall', 'finance-ro', 'vpn-users', 'build-admin', 'hr-records', 'sales-emea', 'support-l2', 'deploy-prod', 'wiki-editor',
  'grafana-view', 'db-readonly', 'k8s-staging', 'payroll-ro', 'security-ir', 'design-team', 'legal-docs', 'marketing', 'data-science', 'backup-ops']
/**
 * The person the OpenID Connect rows sign in, made through the admin API: none of the seeded
 * accounts, which the Login scenarios sign in by turns (a Login of an account holding more than
 * AUTH_MAX_TOKENS_PER_ACCOUNT tokens ends its oldest, and the refresh row gives this one thousands).
 */
const OIDC_PERSON = 'bench.oidc'

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

    // /metrics is served on the internal listener only (unless AUTH_PUBLIC_INTERNALS asks): the bench reads the hash queue there.
    const internalPort = await freePort()
    const serviceEnv: Record<string, string> = {
      NODE_ENV: 'production',
      INTERNAL_PORT: String(internalPort),
      LOG_LEVEL: 'info',
      DATABASE_URL: database.url,
      REDIS_URL,
      AUTH_REDIS_KEY_PREFIX: KEY_PREFIX,
      // At their maxima, so the failure scenario measures failed logins rather than 429s.
      AUTH_MAX_FAILED_LOGINS: '100',
      AUTH_MAX_FAILED_LOGINS_PER_IP: '1000000',
      // The one load generator's address stands for many clients: its fair share of the hash
      // queue is the whole queue, so Login scenarios measure hashing, not 429s.
      AUTH_HASH_IP_RUNNING: '64',
      AUTH_HASH_IP_QUEUED: '100000'
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
    // The servers that log write to a pipe a reader process of their own drains, as under a
    // container runtime or `| cat`: never to /dev/null (bench/README.md, "How it measures").
    const logReaders = new Map<string, LogReader>()
    // Every baseline runs with the V8 flags the service sets for itself (src/app/v8-tuning.ts), so
    // both sides of a ratio run on the same engine settings; and every server, the service too,
    // with the young generation's floor at the size each one reaches under sustained load.
    const start = async (name: string, script: string, env: Record<string, string>, readyPath: string, options: { args?: string[], logs?: boolean, port?: number } = {}): Promise<Child> => {
      const engineFlags = [...BENCH_V8_FLAGS, ...(name === 'service' || name === 'service-traced' || name === 'service-idle' || name === 'service-webhooks' ? [] : SERVING_V8_FLAGS)]
      const pipe = options.logs === true ? await openLogPipe(compiled('./servers/log-reader.js')) : undefined
      if (pipe !== undefined) logReaders.set(name, pipe.reader)
      const child = await startChild({ name, script, args: options.args ?? [], env, readyPath, nodeFlags: [...engineFlags, ...profiled(name)], ...(pipe === undefined ? {} : { stdoutFd: pipe.writeFd }), ...(options.port === undefined ? {} : { port: options.port }) })
      children.push(child)
      return child
    }

    // The admin API's key is given to this service only (never to serviceEnv, which the report prints): the bench makes its API key there.
    const adminKey = randomBytes(32).toString('base64url')
    // The OpenID Connect provider on, at the service's own origin (so its port is picked here). It seals its
    // signing keys with the TOTP key: a random one, shared with the provider's ES256 copy, never printed.
    const servicePort = await freePort()
    const issuer = `http://127.0.0.1:${servicePort}/oidc`
    const sealingKey = randomBytes(32).toString('base64')
    const service = await start('service', join(ROOT, 'dist', 'cli', 'main.js'), { ...serviceEnv, AUTH_OIDC_ISSUER: issuer, AUTH_TOTP_KEY: sealingKey, AUTH_ADMIN_KEY: adminKey }, '/health/ready', { args: ['serve'], logs: true, port: servicePort })
    const login = await fetch(`${service.origin}/auth/Login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ username: accountName(0), password: PASSWORD })
    })
    const { token } = await login.json() as { token?: string }
    if (login.status !== 200 || token === undefined) throw new Error(`the service refused the bench's Login: ${login.status}`)
    const { account_id: accountId, username } = await (await fetch(`${service.origin}/auth/Authenticate?token=${token}`)).json() as { account_id: string, username: string }
    const apiKey = await createServiceKey(`http://127.0.0.1:${internalPort}`, adminKey)
    const groupsToken = await groupedAccountToken(service.origin, `http://127.0.0.1:${internalPort}`, adminKey, accountName(2))
    const oidc = await prepareOidc(service.origin, issuer, `http://127.0.0.1:${internalPort}`, adminKey)
    log('service up, its stdout a pipe to a log reader of its own; starting the baselines')

    const argon2Env = { BENCH_HASH: passwordHash, BENCH_PASSWORD: PASSWORD, BENCH_CONCURRENCY: String(config.hashing.concurrency), BENCH_QUEUE_MAX: String(config.hashing.maxQueued) }
    const oneGetEnv = { BENCH_REDIS_URL: REDIS_URL, BENCH_KEY: keyLayout(KEY_PREFIX).tokenKey(hashToken(token)) }
    // The same service with tracing on, exporting OTLP/protobuf to a sink process on this machine.
    const otlpSink = await start('otlp-sink', compiled('./servers/otlp-sink.js'), {}, '/')
    const tracedEnv = { ...serviceEnv, INTERNAL_PORT: String(await freePort()), OTEL_EXPORTER_OTLP_ENDPOINT: otlpSink.origin, OTEL_SERVICE_NAME: 'auth-token-service-bench' }
    const [bare, oneGet, oneGetTwin, jwt, argon2, argon2NodeRs, ordersDirect, ordersCached, ordersUnguarded, serviceOtherBinding] = await Promise.all([
      start('bare', compiled('./servers/bare.js'), {}, '/'),
      start('one-get', compiled('./servers/one-get.js'), oneGetEnv, '/'),
      start('one-get-twin', compiled('./servers/one-get.js'), oneGetEnv, '/'),
      start('jwt', compiled('./servers/jwt.js'), {}, '/token'),
      start('argon2', compiled('./servers/argon2-verify.js'), { ...argon2Env, BENCH_BINDING: 'argon2' }, '/health'),
      start('argon2-node-rs', compiled('./servers/argon2-verify.js'), { ...argon2Env, BENCH_BINDING: 'node-rs' }, '/health'),
      start('orders-direct', compiled('./servers/orders.js'), { BENCH_REDIS_URL: REDIS_URL, BENCH_KEY_PREFIX: KEY_PREFIX, BENCH_CACHE: 'off' }, '/health'),
      start('orders-cached', compiled('./servers/orders.js'), { BENCH_REDIS_URL: REDIS_URL, BENCH_KEY_PREFIX: KEY_PREFIX, BENCH_CACHE: 'on' }, '/health'),
      start('orders-unguarded', compiled('./servers/orders-unguarded.js'), { BENCH_ACCOUNT_ID: accountId, BENCH_USERNAME: username }, '/health'),
      start('service-other-binding', compiled('./servers/service-with-binding.js'), { ...serviceEnv, BENCH_ROOT: ROOT, BENCH_BINDING: OTHER_BINDING }, '/health/ready', { logs: true })
    ])
    // After the others: a service's start (migrations checked, hasher threads, Redis) beside ten more took over 30 s here.
    const serviceTraced = await start('service-traced', join(ROOT, 'dist', 'cli', 'main.js'), tracedEnv, '/health/ready', { args: ['serve'], logs: true })
    // The same service with the idle timeout on; its token from its own Login, so that it has its idle key.
    const serviceIdle = await start('service-idle', join(ROOT, 'dist', 'cli', 'main.js'), { ...serviceEnv, INTERNAL_PORT: String(await freePort()), AUTH_IDLE_TIMEOUT_SECONDS: '900' }, '/health/ready', { args: ['serve'], logs: true })
    const idleLogin = await fetch(`${serviceIdle.origin}/auth/Login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ username: accountName(1), password: PASSWORD })
    })
    const { token: idleToken } = await idleLogin.json() as { token?: string }
    if (idleLogin.status !== 200 || idleToken === undefined) throw new Error(`the idle-timeout service refused the bench's Login: ${idleLogin.status}`)
    // The same service with webhooks on, delivering every event to a receiver process that verifies each signature.
    const webhookSecret = `whsec_${randomBytes(32).toString('base64')}`
    const webhookReceiver = await start('webhook-receiver', compiled('./servers/webhook-receiver.js'), { BENCH_WEBHOOK_SECRET: webhookSecret }, '/')
    const webhooksInternalPort = await freePort()
    const serviceWebhooks = await start('service-webhooks', join(ROOT, 'dist', 'cli', 'main.js'), {
      ...serviceEnv, INTERNAL_PORT: String(webhooksInternalPort), ...(process.env.BENCH_WEBHOOKS_AA === '1' ? {} : { AUTH_WEBHOOK_URL: `${webhookReceiver.origin}/hooks`, AUTH_WEBHOOK_SECRET: webhookSecret })
    }, '/health/ready', { args: ['serve'], logs: true })
    // The provider with its clients' ID tokens signed with ES256 (servers/service-oidc-alg.ts): the same build, Postgres and Redis.
    const es256Port = await freePort()
    const es256Issuer = `http://127.0.0.1:${es256Port}/oidc`
    const serviceOidcEs256 = await start('service-oidc-es256', compiled('./servers/service-oidc-alg.js'), {
      ...serviceEnv, INTERNAL_PORT: String(await freePort()), AUTH_OIDC_ISSUER: es256Issuer, AUTH_TOTP_KEY: sealingKey, BENCH_ROOT: ROOT, BENCH_ID_TOKEN_ALG: 'ES256'
    }, '/health/ready', { logs: true, port: es256Port })
    const es256Refresh = await refreshLoad(signedInBrowser(serviceOidcEs256.origin, es256Issuer, { username: OIDC_PERSON, password: PASSWORD }), es256Issuer, oidc.es256Client, 'ES256')
    const { token: jwtToken } = await (await fetch(`${jwt.origin}/token`)).json() as { token: string }
    await assertSameAnswer(`${ordersCached.origin}/orders`, `${ordersUnguarded.origin}/orders`, token)
    log(`${children.length} servers up`)

    const allScenarios = defineScenarios({
      origins: { service: service.origin, bare: bare.origin, oneGet: oneGet.origin, oneGetTwin: oneGetTwin.origin, jwt: jwt.origin, argon2: argon2.origin, argon2NodeRs: argon2NodeRs.origin, ordersDirect: ordersDirect.origin, ordersCached: ordersCached.origin, ordersUnguarded: ordersUnguarded.origin, serviceOtherBinding: serviceOtherBinding.origin, serviceTraced: serviceTraced.origin, serviceIdle: serviceIdle.origin, serviceWebhooks: serviceWebhooks.origin, serviceOidcEs256: serviceOidcEs256.origin },
      serviceBinding: SERVICE_BINDING,
      token,
      apiKey,
      groupsToken,
      oidcAccessToken: oidc.accessToken,
      refresh: { rs256: oidc.refresh, es256: es256Refresh },
      idleToken,
      unknownToken: generateToken('unknown'),
      jwtToken,
      password: PASSWORD,
      accounts: ACCOUNTS,
      connections: settings.connections
    })
    const byId = new Map(allScenarios.map((scenario) => [scenario.id, scenario]))
    for (const id of only ?? []) {
      if (!byId.has(id) && ![...byId.values()].some((scenario) => scenario.background?.id === id) && id !== 'memory') throw new Error(`--only: no scenario ${id}`)
      if (byId.get(id)?.besideOnly === true) log(`--only: ${id} runs only beside the scenarios it is the ceiling of; name one of them`)
    }
    // The smoke run takes every scenario too, so that none of them can rot.
    const scenarios = allScenarios.filter((scenario) => scenario.besideOnly !== true && (only === undefined ||
      only.has(scenario.id) || (scenario.background !== undefined && only.has(scenario.background.id))))
    // The scenarios a ratio is taken against run beside it, whether or not they were chosen themselves.
    const partnersOf = (scenario: Scenario): Scenario[] => (scenario.paired ?? []).flatMap((id) => {
      const partner = byId.get(id)
      return partner === undefined ? [] : [partner]
    })
    const besideOnly = [...new Map(scenarios.flatMap(partnersOf).filter((partner) => partner.besideOnly === true).map((partner) => [partner.id, partner])).values()]

    // Hashes of Logins that autocannon stopped waiting for still run: each scenario starts on empty queues.
    const hashQueues = [
      async () => Number(/^auth_password_hash_queue_depth (\d+)/m.exec(await (await fetch(`http://127.0.0.1:${internalPort}/metrics`)).text())?.[1] ?? Number.NaN),
      async () => (await (await fetch(`${serviceOtherBinding.origin}/bench/hash-queue-depth`)).json() as { depth: number }).depth,
      async () => Number(/^auth_password_hash_queue_depth (\d+)/m.exec(await (await fetch(`http://127.0.0.1:${webhooksInternalPort}/metrics`)).text())?.[1] ?? Number.NaN),
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
    // scenario id -> partner id -> the partner's runs beside that scenario's, one per round
    const pairedSamples = new Map<string, Record<string, Sample[]>>()
    const recordPaired = (id: string, partner: string, sample: Sample): void => {
      const byPartner = pairedSamples.get(id) ?? {}
      byPartner[partner] = [...byPartner[partner] ?? [], sample]
      pairedSamples.set(id, byPartner)
    }
    const servers: Record<ServerName, Child> = { service, bare, oneGet, oneGetTwin, jwt, argon2, argon2NodeRs, ordersDirect, ordersCached, ordersUnguarded, serviceOtherBinding, serviceTraced, serviceIdle, serviceWebhooks, serviceOidcEs256 }
    const clocksOf = (scenario: Scenario): ServerClocks => {
      const server = servers[scenario.server]
      const reader = logReaders.get(server.name)
      return {
        cpuSeconds: () => cpuSeconds(server.pid),
        ...(reader === undefined ? {} : { logBytes: () => reader.bytesRead() }),
        ...(scenario.threads === true ? { cpuSecondsByThread: () => cpuSecondsByThread(server.pid) } : {})
      }
    }
    const durationOf = (scenario: Scenario): number => Math.max(settings.durationSeconds, scenario.minSeconds ?? 0)
    // The log reader's stop: a second in the middle of the run (60 % of a shorter one).
    const readerStop = (scenario: Scenario): Pause | undefined => {
      if (scenario.stopsLogReader !== true) return undefined
      const reader = logReaders.get(servers[scenario.server].name)
      if (reader === undefined) throw new Error(`${scenario.id}: its server has no log reader`)
      const duration = durationOf(scenario)
      const forSeconds = Math.min(1, Math.round(duration * 0.6 * 10) / 10)
      return { atSeconds: (duration - forSeconds) / 2, forSeconds, stop: () => { reader.pause() }, resume: () => { reader.resume() } }
    }
    const runScenario = async (scenario: Scenario, durationSeconds: number, pause?: Pause): Promise<{ primary: Sample, background?: Sample }> => {
      const runSettings = { ...settings, durationSeconds }
      await scenario.prepare?.()
      await quiesce()
      // Two loads on one server: its CPU time cannot be split between them.
      if (scenario.background !== undefined) return await runUnderLoad(scenario.load, scenario.background.load, runSettings, STORM_LEAD_SECONDS)
      return { primary: await runLoad(scenario.load, runSettings, clocksOf(scenario), pause) }
    }
    const logRun = (round: number, label: string, sample: Sample): void => {
      const window = sample.window === undefined
        ? ''
        : `; sent ${sample.window.startSeconds.toFixed(2)}-${(sample.window.startSeconds + sample.window.seconds).toFixed(2)} s${sample.window.stopped ? ' (log reader stopped)' : ''}: ${sample.window.answered} answered, p99 ${sample.window.p99Ms.toFixed(2)} ms, max ${sample.window.maxMs.toFixed(2)} ms`
      const logBytes = Number.isFinite(sample.logBytesPerRequest) ? `, log ${sample.logBytesPerRequest.toFixed(0)} B/req` : ''
      const threads = sample.cpuMicrosPerRequestByThread === undefined ? '' : ` (${Object.entries(sample.cpuMicrosPerRequestByThread).filter(([, micros]) => micros >= 0.5).map(([kind, micros]) => `${kind} ${micros.toFixed(0)}`).join(', ')})`
      log(`round ${round} ${label}: ${Math.round(sample.requestsPerSecond)} req/s, p99 ${sample.p99Ms.toFixed(2)} ms, ${sample.cpuMicrosPerRequest.toFixed(0)} µs CPU/req${threads}${logBytes}${window}${sample.unexpected > 0 ? `, ${sample.unexpected} unexpected ${JSON.stringify(sample.statuses)}` : ''}`)
    }

    log(`${scenarios.length} scenarios (${besideOnly.length} ceilings beside them): warm-up ${settings.warmupSeconds} s each, then ${settings.runs} rounds of ${settings.durationSeconds} s each`)
    if (settings.warmupSeconds > 0) {
      // A ceiling whose process a scenario of its own warms too (the one-GET server: the same
      // handler) has only its route's request path to warm, and half the time does that.
      const warmedServers = new Set(scenarios.map((scenario) => scenario.server))
      for (const scenario of besideOnly) await runScenario(scenario, Math.max(settings.warmupSeconds / (warmedServers.has(scenario.server) ? 2 : 1), scenario.minSeconds ?? 0))
      for (const scenario of scenarios) await runScenario(scenario, Math.max(settings.warmupSeconds, scenario.minSeconds ?? 0))
    }
    const measuringFrom = readCpuTimes()
    const stolenByRound: number[] = []
    for (let round = 1; round <= settings.runs; round++) {
      const roundFrom = readCpuTimes()
      // The unsliced run made last, when nothing ran after it: a scenario whose partner it is takes it as its run right before.
      let lastRun: { id: string, seconds: number, sample: Sample } | undefined
      for (const scenario of scenarios) {
        const partners = partnersOf(scenario)
        const pause = readerStop(scenario)
        if (scenario.background === undefined && pause === undefined && scenario.unsliced !== true && partners.length > 0) {
          // The scenario and the baselines it is divided by, in short slices taken in turns.
          for (const entry of [scenario, ...partners]) await entry.prepare?.()
          await quiesce()
          const group = [scenario, ...partners]
          const [primary, ...beside] = shareLogBytes(group.map((entry) => entry.server), await runInterleaved(group.map((entry) => ({ spec: entry.load, clocks: clocksOf(entry) })), settings, settings.slices))
          if (primary === undefined) throw new Error(`no sample of ${scenario.id}`)
          partners.forEach((partner, index) => {
            const sample = beside[index]
            if (sample === undefined) return
            recordPaired(scenario.id, partner.id, sample)
            logRun(round, `${partner.id} (beside ${scenario.id})`, sample)
          })
          record(scenario.id, primary)
          logRun(round, scenario.id, primary)
          lastRun = undefined
          continue
        }
        // A storm or a stopped reader cannot be sliced (a storm takes seconds to fill and drain
        // the hash queues, the stop lasts a second), nor a traced service (`unsliced`): the partners run right before it, and after
        // a stop again, the same seconds of their runs marked as the scenario's window.
        const window = pause === undefined ? undefined : { atSeconds: pause.atSeconds, forSeconds: pause.forSeconds }
        const duration = durationOf(scenario)
        for (const partner of partners) {
          const reused = lastRun?.id === partner.id && lastRun.seconds === duration ? lastRun.sample : undefined
          const sample = reused ?? (await runScenario(partner, duration, window)).primary
          recordPaired(scenario.id, partner.id, sample)
          logRun(round, `${partner.id} (beside ${scenario.id}${reused === undefined ? '' : ': the run right before'})`, sample)
        }
        const { primary, background } = await runScenario(scenario, duration, pause)
        record(scenario.id, primary)
        if (scenario.background !== undefined && background !== undefined) record(scenario.background.id, background)
        logRun(round, scenario.id, primary)
        lastRun = undefined
        if (pause === undefined) continue
        for (const partner of partners) {
          const { primary: after } = await runScenario(partner, duration, window)
          recordPaired(scenario.id, `${partner.id}${AFTER}`, after)
          logRun(round, `${partner.id} (after ${scenario.id})`, after)
          lastRun = { id: partner.id, seconds: duration, sample: after }
        }
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

    // The traced service's spans went somewhere: what the sink received (SIGTERM flushes the last batch).
    await serviceTraced.stop()
    const exported = await (await fetch(otlpSink.origin)).json() as { requests: number, bytes: number, spans: number, serverSpans: number }
    // Every Login of service-webhooks was delivered: what the receiver verified, and what still waits in the outbox.
    const webhookMetrics = await (await fetch(`http://127.0.0.1:${webhooksInternalPort}/metrics`)).text()
    const webhooksPending = process.env.BENCH_WEBHOOKS_AA === '1' ? 0 : Number(/^auth_webhook_deliveries\{status="pending"\} (\d+)/m.exec(webhookMetrics)?.[1] ?? Number.NaN)
    const webhookTotals = await (await fetch(webhookReceiver.origin)).json() as { received: number, refused: number, types: Record<string, number> }
    log(`webhooks: the receiver verified ${webhookTotals.received} (${JSON.stringify(webhookTotals.types)}), refused ${webhookTotals.refused}; ${webhooksPending} pending at the end`)
    // The servers stop first, so that each log reader reaches the end of its pipe and says what it got.
    await Promise.allSettled(children.map(async (child) => { await child.stop() }))
    const logTotals: Record<string, LogTotals> = {}
    for (const [name, reader] of logReaders) {
      const totals = await reader.finish()
      if (totals !== undefined) logTotals[name] = totals
    }
    const tracing = tracingNote(exported, logTotals['service-traced']?.lines)
    log(tracing)

    // A ceiling measured only beside others: its row is its runs beside the first scenario that paired it.
    const besideRuns = (id: string): Sample[] => scenarios.map((scenario) => pairedSamples.get(scenario.id)?.[id]).find((runs) => runs !== undefined) ?? []
    const measured: ScenarioRuns[] = [
      ...besideOnly.map((scenario) => ({ id: scenario.id, title: scenario.title, group: scenario.group, baseline: scenario.baseline, runs: besideRuns(scenario.id) })),
      ...scenarios.flatMap((scenario) => [
        { id: scenario.id, title: scenario.title, group: scenario.group, baseline: scenario.baseline, requestsPerUnit: scenario.requestsPerUnit, runs: samples.get(scenario.id) ?? [], paired: pairedSamples.get(scenario.id) },
        ...(scenario.background === undefined
          ? []
          : [{ id: scenario.background.id, title: scenario.background.title, group: scenario.group, baseline: scenario.background.baseline, runs: samples.get(scenario.background.id) ?? [] }])
      ])
    ]
    const order = new Map(allScenarios.flatMap((scenario) => [scenario.id, ...(scenario.background === undefined ? [] : [scenario.background.id])]).map((id, index) => [id, index]))
    measured.sort((a, b) => (order.get(a.id) ?? 0) - (order.get(b.id) ?? 0))
    const rows = summarize(measured)
    const report: BenchReport = {
      machine,
      settings,
      service: {
        ...serviceEnv,
        AUTH_OIDC_ISSUER: issuer,
        DATABASE_URL: '(a database of its own)',
        stdout: 'a pipe drained by a reader process of its own (bench/servers/log-reader.ts); the same for service-other-binding',
        AUTH_HASH_CONCURRENCY: String(config.hashing.concurrency)
      },
      rows,
      targets: checkTargets(rows, memory),
      notes: [...compareBindings(rows), ...logNotes(logTotals), tracing],
      memory,
      logReaders: logTotals,
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

/**
 * Loads interleaved on one server (auth-key beside auth-query-get) read the same log reader, so
 * each was charged every byte of both: their log B/req is the bytes over both loads' answers.
 */
function shareLogBytes (servers: readonly ServerName[], samples: Sample[]): Sample[] {
  return samples.map((sample, index) => {
    const sharing = samples.filter((_, other) => servers[other] === servers[index])
    if (sharing.length === 1) return sample
    const responses = sharing.reduce((sum, other) => sum + other.responses, 0)
    return { ...sample, logBytesPerRequest: sample.logBytesPerRequest * sample.responses / responses }
  })
}

/**
 * A service account and one API key of it, made as an operator makes them: through the admin
 * API on the service's internal listener (docs/machine-credentials.md). The secret is returned
 * to the caller only, never logged.
 */
async function createServiceKey (internalOrigin: string, adminKey: string): Promise<string> {
  const post = async (path: string, body: Record<string, unknown>): Promise<Response> => await fetch(`${internalOrigin}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body)
  })
  const account = await post('/admin/users', { username: 'bench-service', kind: 'service' })
  if (!account.ok) throw new Error(`the admin API refused the bench's service account: ${account.status}`)
  const created = await post('/admin/users/bench-service/keys', { name: 'bench', expires_in_days: 1 })
  const { secret } = await created.json() as { secret?: unknown }
  if (!created.ok || typeof secret !== 'string') throw new Error(`the admin API refused the bench's API key: ${created.status}`)
  return secret
}

/**
 * A token of an account in BENCH_GROUPS: the groups set as an operator sets them (the admin API's
 * PUT on the service's internal listener), then the account's Login, whose token's record carries
 * them. Authenticate must answer all twenty, or the row would measure an account in none.
 */
async function groupedAccountToken (serviceOrigin: string, internalOrigin: string, adminKey: string, username: string): Promise<string> {
  const set = await fetch(`${internalOrigin}/admin/users/${encodeURIComponent(username)}/groups`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ groups: BENCH_GROUPS })
  })
  if (!set.ok) throw new Error(`the admin API refused the bench's groups: ${set.status}`)
  const login = await fetch(`${serviceOrigin}/auth/Login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ username, password: PASSWORD })
  })
  const { token } = await login.json() as { token?: string }
  if (login.status !== 200 || token === undefined) throw new Error(`the service refused the grouped account's Login: ${login.status}`)
  const { groups } = await (await fetch(`${serviceOrigin}/auth/Authenticate?token=${token}`)).json() as { groups?: unknown }
  const expected = [...BENCH_GROUPS].sort()
  if (JSON.stringify(groups) !== JSON.stringify(expected)) throw new Error(`Authenticate of the grouped account answered groups ${JSON.stringify(groups)}, not its ${expected.length}`)
  return token
}

/**
 * What the OpenID Connect rows need of the service's provider, made as an operator and a relying
 * party make them: a person (OIDC_PERSON) and three confidential clients through the admin API;
 * the person signed in through the service's sign-in page, once; the code flow (openid-client,
 * PKCE) of one client for the access token `auth-oidc` authenticates, which Authenticate must
 * answer as kind oidc of that client; and the refresh load of another client (a grant of its own,
 * so that nothing the refresh row does, a reuse's end of its grant included, can end the other's
 * access token). The third client is the ES256 copy's (servers/service-oidc-alg.ts).
 */
async function prepareOidc (serviceOrigin: string, issuer: string, internalOrigin: string, adminKey: string): Promise<{ accessToken: string, refresh: RefreshLoad, es256Client: BenchClient }> {
  await createPerson(internalOrigin, adminKey, OIDC_PERSON, PASSWORD)
  const app = await registerClient(internalOrigin, adminKey, 'bench-app')
  const refreshClient = await registerClient(internalOrigin, adminKey, 'bench-refresh')
  const es256Client = await registerClient(internalOrigin, adminKey, 'bench-refresh-es256')
  const browser = signedInBrowser(serviceOrigin, issuer, { username: OIDC_PERSON, password: PASSWORD })
  const { accessToken } = await browser.codeFlow(app)
  const answer = await (await fetch(`${serviceOrigin}/auth/Authenticate?token=${accessToken}`)).json() as { status?: unknown, kind?: unknown, client_id?: unknown, username?: unknown }
  if (answer.status !== 0 || answer.kind !== 'oidc' || answer.client_id !== app.clientId || answer.username !== OIDC_PERSON) {
    throw new Error(`Authenticate of the provider's access token answered ${JSON.stringify({ status: answer.status, kind: answer.kind, username: answer.username })}, not an active token of kind oidc of ${OIDC_PERSON}`)
  }
  return { accessToken, refresh: await refreshLoad(browser, issuer, refreshClient, 'RS256'), es256Client }
}

/**
 * A refresh load on a provider, from a browser signed in there: one code flow and one refresh
 * through openid-client, which checks that the refresh's answer carries an ID token signed with
 * `alg`; the rotated refresh token is the pool's first, and each run's `prepare` tops the pool up
 * with more code flows of the same browser (single sign-on: one sign-in session, one grant).
 */
async function refreshLoad (browser: Browser, issuer: string, client: BenchClient, alg: 'RS256' | 'ES256'): Promise<RefreshLoad> {
  const first = await browser.codeFlow(client, { idTokenAlg: alg })
  const refreshed = await browser.refresh(client, first.refreshToken, { idTokenAlg: alg })
  if (first.idTokenAlg !== alg || refreshed.idTokenAlg !== alg) throw new Error(`${issuer}: ID tokens signed with ${first.idTokenAlg} and ${refreshed.idTokenAlg}, not ${alg}`)
  const pool = refreshPool(browser, client, { idTokenAlg: alg })
  pool.put(refreshed.refreshToken)
  const credentials = Buffer.from(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.secret)}`).toString('base64')
  return { tokenEndpoint: `${issuer}/token`, authorization: `Basic ${credentials}`, pool }
}

/**
 * The guarded route and its unguarded ceiling must answer the same bytes, or their ratio
 * compares two different routes (bench/servers/orders-unguarded.ts copies the example's).
 */
async function assertSameAnswer (guardedUrl: string, unguardedUrl: string, token: string): Promise<void> {
  const answer = async (url: string): Promise<string> => {
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
    return `${response.status} ${response.headers.get('content-type') ?? ''} ${await response.text()}`
  }
  const [guarded, unguarded] = await Promise.all([answer(guardedUrl), answer(unguardedUrl)])
  if (guarded !== unguarded) throw new Error(`orders-unguarded answers «${unguarded}» where the example's guarded GET /orders answers «${guarded}»: make bench/servers/orders-unguarded.ts follow examples/orders-service/src/app.ts`)
}
