/*
 * Store-level throughput, one Redis against a 3-master Redis Cluster on the same machine:
 * ops/s of the token store's issue (a Login's store step: one script) and find (Authenticate's one
 * GET), through createRedisTokenStore, 64 in flight. Information, not a target: on one machine the
 * cluster's masters share its cores, so the figure shows the client-side cost of spreading (GETs to
 * three nodes instead of MGET batches to one), not the scale that three machines give.
 *
 *   node --conditions=@auth-token-service/source --import @tapjs/typescript/import bench/store-throughput.ts [--ops 20000]
 */
import type { RedisTopology } from '../src/core/stores/redis/client.js'
import { createRedisTokenStore, type RedisTokenStore } from '../src/core/stores/redis/token-store.js'
import { generateToken, hashToken } from '@auth-token-service/protocol/token'
import { opsPerSecond } from './lib/rate.js'
import { startCluster, startThrowawayRedis } from '../support/redis.js'

const opsArg = process.argv.indexOf('--ops')
const OPS = opsArg > 0 ? Number(process.argv[opsArg + 1]) : 20_000
const IN_FLIGHT = 64

const teardowns: Array<() => unknown> = []
const scope = { teardown: (fn: () => unknown) => { teardowns.push(fn) } }

const rate = async (work: (i: number) => Promise<unknown>): Promise<number> => await opsPerSecond(work, OPS, IN_FLIGHT)

async function measure (name: string, topology: RedisTopology): Promise<string> {
  const store: RedisTokenStore = createRedisTokenStore({ topology, denyTtlMs: 300_000, commandTimeoutMs: 10_000 })
  await store.ready()
  const hashes = Array.from({ length: OPS }, (_, i) => ({ accountId: String(100_000 + (i >> 1)), hash: hashToken(generateToken(String(100_000 + (i >> 1)))) }))
  const expiresAt = Date.now() + 3_600_000
  // A warm-up pass loads the scripts on every node.
  await store.issue(hashToken(generateToken('warm')), { accountId: 'warm', username: 'warm', federated: false, expiresAt }, 60_000)
  const issue = await rate(async (i) => {
    const entry = hashes[i]
    if (entry !== undefined) await store.issue(entry.hash, { accountId: entry.accountId, username: 'anna.meier', federated: false, expiresAt }, 3_600_000)
  })
  const find = await rate(async (i) => await store.find(hashes[i]?.hash ?? ''))
  await store.close()
  return `| ${name} | ${Math.round(issue).toLocaleString('en')} | ${Math.round(find).toLocaleString('en')} |`
}

try {
  const single = await startThrowawayRedis(scope)
  const cluster = await startCluster(scope)
  const rows = [
    await measure('one Redis', { kind: 'single', url: single.url }),
    await measure('Cluster, 3 masters', cluster.topology)
  ]
  console.log(`store throughput, ${OPS.toLocaleString('en')} ops each, ${IN_FLIGHT} in flight, Node ${process.version}\n`)
  console.log('| Redis | issue ops/s | find ops/s |\n| --- | --- | --- |')
  for (const row of rows) console.log(row)
} finally {
  for (const fn of teardowns.reverse()) await fn()
}
