/*
 * What `appendfsync always` costs a Login and a Logout (the persistence a Redis needs so that a
 * restart brings no logged-out token back), against `everysec` and no persistence: the token
 * store's issue (a Login's Redis step: one script) and terminate (a Logout's: a GET and one
 * script), on a throwaway redis-server each, through createRedisTokenStore.
 * Latency one at a time (what a single client waits) and throughput 64 in flight (where Redis
 * batches the writes of one event-loop turn into one fsync). A Login's argon2id hash (tens of
 * ms) is not in these figures: it is the same in every row.
 *
 *   node --conditions=@auth-token-service/source --import @tapjs/typescript/import bench/persistence-cost.ts [--ops 2000]
 */
import { performance } from 'node:perf_hooks'
import { createRedisTokenStore } from '../src/core/stores/redis/token-store.js'
import { generateToken, hashToken } from '@auth-token-service/protocol/token'
import { opsPerSecond } from './lib/rate.js'
import { startThrowawayRedis } from '../support/redis.js'

const opsArg = process.argv.indexOf('--ops')
const OPS = opsArg > 0 ? Number(process.argv[opsArg + 1]) : 2000
const IN_FLIGHT = 64

const teardowns: Array<() => unknown> = []
const scope = { teardown: (fn: () => unknown) => { teardowns.push(fn) } }

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p / 100))] ?? NaN

/** [p50 ms, p99 ms] of `work` run one at a time. */
async function latency (work: (i: number) => Promise<unknown>): Promise<[number, number]> {
  const times: number[] = []
  for (let i = 0; i < OPS; i++) {
    const started = performance.now()
    await work(i)
    times.push(performance.now() - started)
  }
  times.sort((a, b) => a - b)
  return [percentile(times, 50), percentile(times, 99)]
}

const rate = async (work: (i: number) => Promise<unknown>): Promise<number> => await opsPerSecond(work, OPS, IN_FLIGHT)

async function measure (name: string, args: string[]): Promise<string> {
  const server = await startThrowawayRedis(scope, { args })
  // everysec is what is measured against, not served: accepted here.
  const store = createRedisTokenStore({ url: server.url, denyTtlMs: 300_000, commandTimeoutMs: 10_000, acceptLossyPersistence: true })
  await store.ready()
  const expiresAt = Date.now() + 3_600_000
  const tokens = (): Array<{ accountId: string, hash: string }> => Array.from({ length: OPS }, (_, i) => {
    const accountId = String(100_000 + (i >> 1))
    return { accountId, hash: hashToken(generateToken(accountId)) }
  })
  const issueAll = (batch: Array<{ accountId: string, hash: string }>) => async (i: number): Promise<void> => {
    const entry = batch[i]
    if (entry !== undefined) await store.issue(entry.hash, { accountId: entry.accountId, username: 'anna.meier', federated: false, expiresAt }, 3_600_000)
  }
  const terminateAll = (batch: Array<{ hash: string }>) => async (i: number): Promise<void> => {
    const entry = batch[i]
    if (entry !== undefined && await store.terminate(entry.hash) === null) throw new Error('a Logout ended nothing')
  }
  await store.persistence()
  const one = tokens()
  const [issueP50, issueP99] = await latency(issueAll(one))
  const [endP50, endP99] = await latency(terminateAll(one))
  const many = tokens()
  const issueRate = await rate(issueAll(many))
  const endRate = await rate(terminateAll(many))
  await store.close()
  const ms = (value: number): string => value.toFixed(2)
  const perSecond = (value: number): string => Math.round(value).toLocaleString('en')
  return `| ${name} | ${ms(issueP50)} / ${ms(issueP99)} | ${ms(endP50)} / ${ms(endP99)} | ${perSecond(issueRate)} | ${perSecond(endRate)} |`
}

try {
  const rows = [
    await measure('AOF, appendfsync always', ['--appendonly', 'yes', '--appendfsync', 'always']),
    await measure('AOF, appendfsync everysec', ['--appendonly', 'yes', '--appendfsync', 'everysec']),
    await measure('no persistence', ['--appendonly', 'no', '--save', ''])
  ]
  console.log(`persistence cost, ${OPS.toLocaleString('en')} ops each; latency one at a time, throughput ${IN_FLIGHT} in flight; Node ${process.version}\n`)
  console.log('| Redis | Login step p50 / p99 ms | Logout step p50 / p99 ms | Login step ops/s | Logout step ops/s |\n| --- | --- | --- | --- | --- |')
  for (const row of rows) console.log(row)
} finally {
  for (const fn of teardowns.reverse()) await fn()
}
