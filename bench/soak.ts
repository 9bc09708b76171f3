/**
 * Soak run: mixed load on the real service for SOAK_SECONDS (default 300), through
 * autocannon, loopback only, bounded in time and rate:
 *   80 % Authenticate of active tokens, 15 % Login, 5 % Logout of tokens the Logins issued,
 * at SOAK_RATE requests per second in all (default 100; each route gets its share as an
 * autocannon instance of its own, so each has its own latency histogram). Reports the
 * requests served, the error count (goal 0: any answer but the expected 200 is an error),
 * p50/p99/max per route, and the service's RSS and heap used at start, middle and end,
 * read from its /metrics.
 *
 * Servers: a throwaway redis-server (noeviction) and postgres (initdb in a temp dir), unless
 * SOAK_REDIS_URL and SOAK_DATABASE_URL name running ones (the database is migrated; the
 * service's Redis keys go under a prefix of their own, deleted at the end).
 *
 *   npm run soak                      # 5 minutes
 *   SOAK_SECONDS=60 npm run soak      # the run in bench/README.md
 */
import autocannon from 'autocannon'
import { randomBytes } from 'node:crypto'
import { availableParallelism, loadavg } from 'node:os'
import { performance } from 'node:perf_hooks'
import { HttpDriver, issuedToken, isRecord } from '../support/load.js'
import { runCli, serviceEnv, startService } from '../support/service.js'
import { startThrowawayPostgres } from '../support/postgres.js'
import { deleteKeysAtEnd, startThrowawayRedis } from '../support/redis.js'
import type { Scope } from '../support/processes.js'

function setting (name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw.trim() === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min || value > max) throw new Error(`${name}: expected a whole number from ${min} to ${max}, got "${raw}"`)
  return value
}

const SECONDS = setting('SOAK_SECONDS', 300, 5, 24 * 3600)
const RATE = setting('SOAK_RATE', 100, 10, 10_000)
const ACCOUNTS = setting('SOAK_ACCOUNTS', 4, 1, 100)
const MIX = { authenticate: 0.80, login: 0.15, logout: 0.05 } as const
const PASSWORD = 'soak password: long enough, ünïcode & all'
const MiB = 1024 * 1024

/** Teardowns, run last-registered first at the end (the servers' exit hook covers a crash). */
class SoakScope implements Scope {
  private readonly steps: Array<() => unknown> = []
  teardown (fn: () => unknown): void { this.steps.push(fn) }
  async close (): Promise<void> {
    for (const step of this.steps.reverse()) {
      try { await step() } catch (error) { process.stderr.write(`teardown: ${String(error)}\n`) }
    }
  }
}

interface MemorySample {
  label: string
  atSeconds: number
  rss: number
  heapUsed: number
}

function metric (text: string, name: string): number {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+]+)$`, 'm').exec(text)
  if (match?.[1] === undefined) throw new Error(`/metrics has no ${name}`)
  return Number(match[1])
}

async function sampleMemory (baseUrl: string, label: string, origin: number): Promise<MemorySample> {
  const response = await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(10_000) })
  const text = await response.text()
  return {
    label,
    atSeconds: (performance.now() - origin) / 1000,
    rss: metric(text, 'process_resident_memory_bytes'),
    heapUsed: metric(text, 'nodejs_heap_size_used_bytes')
  }
}

interface RouteReport {
  route: string
  result: autocannon.Result
  /** Answers other than the expected 200 with status 0 (non-2xx, bad bodies), and connection errors. */
  errors: number
}

/** One autocannon instance for one route at its share of the rate; `check` judges each answer. */
async function cannon (route: string, options: autocannon.Options, check: (status: number, body: string) => boolean): Promise<RouteReport> {
  let wrong = 0
  const requests = (options.requests ?? [{}]).map((request) => ({
    ...request,
    onResponse: (status: number, body: string) => { if (!check(status, body)) wrong++ }
  }))
  const result = await autocannon({ ...options, requests })
  return { route, result, errors: wrong + result.errors }
}

function successBody (body: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(body)
    return isRecord(parsed) && parsed.status === 0 ? parsed : undefined
  } catch {
    return undefined
  }
}

async function main (): Promise<number> {
  const scope = new SoakScope()
  try {
    // ---------------------------------------------------------------- servers
    let redisUrl = process.env.SOAK_REDIS_URL
    let databaseUrl = process.env.SOAK_DATABASE_URL
    const extra: Record<string, string> = {
      // The defaults an operator would run with (the fault tests shorten the command timeout).
      AUTH_REDIS_COMMAND_TIMEOUT_MS: '500',
      // The one load generator stands for many clients: no per-address share of the hash queue.
      AUTH_HASH_IP_RUNNING: '64',
      AUTH_HASH_IP_QUEUED: '100000',
      // The memory samples read /metrics from the service's own port (off there by default).
      AUTH_PUBLIC_INTERNALS: 'true'
    }
    if (redisUrl === undefined || databaseUrl === undefined) {
      process.stderr.write('soak: starting a throwaway redis-server and postgres\n')
      const [redis, postgres] = await Promise.all([startThrowawayRedis(scope, { aof: false }), startThrowawayPostgres(scope)])
      await redis.cli('CONFIG', 'SET', 'maxmemory-policy', 'noeviction')
      redisUrl = redis.url
      databaseUrl = postgres.url
    } else {
      await runCli(['migrate'], { DATABASE_URL: databaseUrl })
      const prefix = `{soak-${randomBytes(4).toString('hex')}}:`
      extra.AUTH_REDIS_KEY_PREFIX = prefix
      deleteKeysAtEnd(scope, redisUrl, prefix)
    }
    const usernames = Array.from({ length: ACCOUNTS }, (_, i) => `soak-${i + 1}-${randomBytes(3).toString('hex')}`)
    const [bootstrap, ...others] = usernames
    const dbUrl = databaseUrl
    await Promise.all(others.map(async (username) => await runCli(['user', 'add', username], { DATABASE_URL: dbUrl }, `${PASSWORD}\n`)))
    const service = await startService(scope, serviceEnv({ redisUrl, databaseUrl }, { username: bootstrap ?? 'soak', password: PASSWORD }, extra))
    process.stderr.write(`soak: service at ${service.baseUrl}, ${ACCOUNTS} accounts\n`)

    // ---------------------------------------------------------------- tokens to work with
    const driver = new HttpDriver(service.baseUrl, { maxSockets: 4, timeoutMs: 30_000 })
    scope.teardown(() => { driver.close() })
    const account = (i: number): string => usernames[i % usernames.length] ?? ''
    async function issue (count: number): Promise<string[]> {
      const tokens: string[] = []
      for (let i = 0; i < count; i += 4) {
        const outcomes = await Promise.all([0, 1, 2, 3].map(async (j) => await driver.login(account(i + j), PASSWORD)))
        for (const outcome of outcomes) {
          const token = issuedToken(outcome)
          if (token === undefined) throw new Error(`a Login before the soak failed: HTTP ${outcome.httpStatus} ${outcome.text}`)
          tokens.push(token)
        }
      }
      return tokens
    }
    // Authenticate asks about tokens nothing ends; Logout ends tokens the Logins issued (oldest first).
    const stable = await issue(100)
    const disposable = await issue(60)
    let loginCount = 0

    // ---------------------------------------------------------------- the run
    const origin = performance.now()
    const samples: MemorySample[] = [await sampleMemory(service.baseUrl, 'start', origin)]
    const middle = setTimeout(() => {
      sampleMemory(service.baseUrl, 'middle', origin).then((sample) => samples.push(sample), (error: unknown) => {
        process.stderr.write(`soak: no middle sample: ${String(error)}\n`)
      })
    }, SECONDS * 500)
    const common = { url: service.baseUrl, duration: SECONDS, timeout: 10 }
    const form = (username: string, extraFields: Record<string, string> = {}): string => new URLSearchParams({ username, password: PASSWORD, ...extraFields }).toString()
    const reports = await Promise.all([
      cannon('Authenticate', {
        ...common,
        connections: 8,
        overallRate: Math.max(1, Math.round(RATE * MIX.authenticate)),
        requests: [{
          method: 'GET',
          setupRequest: (request) => ({ ...request, path: `/auth/Authenticate/${stable[Math.floor(Math.random() * stable.length)] ?? ''}` })
        }]
      }, (status, body) => status === 200 && successBody(body) !== undefined),
      cannon('Login', {
        ...common,
        connections: Math.max(4, Math.ceil(RATE * MIX.login)),
        overallRate: Math.max(1, Math.round(RATE * MIX.login)),
        requests: [{
          method: 'POST',
          path: '/auth/Login',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          setupRequest: (request) => ({ ...request, body: form(account(loginCount++)) })
        }]
      }, (status, body) => {
        const token = successBody(body)?.token
        if (status !== 200 || typeof token !== 'string') return false
        disposable.push(token)
        return true
      }),
      cannon('Logout', {
        ...common,
        connections: 2,
        overallRate: Math.max(1, Math.round(RATE * MIX.logout)),
        requests: [{
          method: 'POST',
          setupRequest: (request) => ({ ...request, path: `/auth/Logout/${disposable.shift() ?? 'none-left'}` })
        }]
      }, (status, body) => status === 200 && successBody(body) !== undefined)
    ])
    clearTimeout(middle)
    samples.push(await sampleMemory(service.baseUrl, 'end', origin))
    const alive = service.exitStatus() === null

    // ---------------------------------------------------------------- the report
    const total = reports.reduce((sum, report) => sum + report.result.requests.total, 0)
    const errors = reports.reduce((sum, report) => sum + report.errors, 0)
    const lines = [
      `SOAK_SECONDS=${SECONDS}, SOAK_RATE=${RATE} req/s (80 % Authenticate, 15 % Login, 5 % Logout), ${ACCOUNTS} accounts; ` +
        `Node ${process.version}, ${availableParallelism()} cores, load average at the end ${loadavg().map((n) => n.toFixed(1)).join(' ')}`,
      '',
      '| route | requests | errors | req/s | p50 ms | p99 ms | max ms |',
      '|---|---:|---:|---:|---:|---:|---:|',
      ...reports.map(({ route, result, errors: routeErrors }) =>
        `| ${route} | ${result.requests.total} | ${routeErrors} | ${(result.requests.total / result.duration).toFixed(1)} | ${result.latency.p50} | ${result.latency.p99} | ${result.latency.max} |`),
      `| all | ${total} | ${errors} | ${(total / SECONDS).toFixed(1)} | | | |`,
      '',
      '| service memory | at s | RSS MiB | heap used MiB |',
      '|---|---:|---:|---:|',
      ...samples.sort((a, b) => a.atSeconds - b.atSeconds).map((sample) =>
        `| ${sample.label} | ${sample.atSeconds.toFixed(0)} | ${(sample.rss / MiB).toFixed(1)} | ${(sample.heapUsed / MiB).toFixed(1)} |`),
      '',
      `service process ${alive ? 'ran throughout' : `DIED: ${JSON.stringify(service.exitStatus())}`}; errors ${errors} (goal 0)`
    ]
    process.stdout.write(`${lines.join('\n')}\n`)
    if (!alive) process.stderr.write(service.output().slice(-4000))
    return errors === 0 && alive ? 0 : 1
  } finally {
    await scope.close()
  }
}

main().then((code) => { process.exitCode = code }, (error: unknown) => {
  process.stderr.write(`soak failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`)
  process.exitCode = 1
})
