import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { DEFAULT_KEY_PREFIX, keyLayout } from '@auth-token-service/protocol/layout'
import { createRedisTokenStore } from '../../src/core/stores/redis/token-store.js'
import type { TokenRecord } from '@auth-token-service/protocol/layout'
import { accountBucket, generateToken, hashToken } from '@auth-token-service/protocol/token'
import { accountName, seededRandom } from './accounts.js'
import { freePort } from '../../support/processes.js'

export interface MemoryFigure {
  tokens: number
  accounts: number
  /** Tokens issued and terminated on top, so the deny set holds its steady-state share. */
  denied: number
  usedMemoryBefore: number
  usedMemoryAfter: number
  bytesPerToken: number
  /** MEMORY USAGE of the keys, per active token. */
  tokenKeysPerToken: number
  indexPerToken: number
  denySetPerToken: number
  indexEncoding: string
  /** Where it was measured: a throwaway redis-server, or a DB of the shared one. */
  where: string
  redisVersion: string
}

export interface MemoryOptions {
  tokens: number
  /** When no redis-server binary is at hand: this DB of a shared Redis, flushed first. */
  fallbackUrl: string
  tokenTtlSeconds: number
  federatedTokenTtlSeconds: number
  denyTtlSeconds: number
}

async function info (redis: Redis, section: string, field: string): Promise<string> {
  const text = await redis.info(section)
  const line = text.split('\r\n').find((entry) => entry.startsWith(`${field}:`))
  if (line === undefined) throw new Error(`INFO ${section} has no ${field}`)
  return line.slice(field.length + 1)
}

/** Sum of MEMORY USAGE over every key matching `pattern`. */
async function memoryUsage (redis: Redis, pattern: string): Promise<number> {
  let total = 0
  let cursor = '0'
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
    cursor = next
    const pipeline = redis.pipeline()
    for (const key of keys) pipeline.memory('USAGE', key, 'SAMPLES', '0')
    for (const [error, bytes] of await pipeline.exec() ?? []) {
      if (error === null && typeof bytes === 'number') total += bytes
    }
  } while (cursor !== '0')
  return total
}

/** A redis-server of the bench's own (no other client's keys or buffers in its used_memory), or undefined. */
async function throwawayRedis (): Promise<{ url: string, stop: () => Promise<void> } | undefined> {
  const port = await freePort()
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
  const failed = once(server, 'error').then(() => true)
  const url = `redis://127.0.0.1:${port}`
  for (let attempt = 0; attempt < 50; attempt++) {
    if (await Promise.race([failed, sleep(100).then(() => false)])) return undefined
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
    const up = await probe.connect().then(async () => await probe.ping() === 'PONG', () => false)
    probe.disconnect()
    if (up) {
      return {
        url,
        async stop () {
          server.kill('SIGTERM')
          await once(server, 'exit')
        }
      }
    }
  }
  server.kill('SIGKILL')
  return undefined
}

/**
 * Bytes of Redis memory per active token: `tokens` tokens issued through the service's
 * own store (createRedisTokenStore().issue(), default key prefix) into an empty Redis,
 * used_memory read before and after. Accounts hold 1 token (half of them), 2 (a
 * quarter), 3 ... (geometric, mean 2: a phone and a laptop), so each account index holds
 * what real ones do; 5 % are federated (longer tokens); usernames are `first.last`.
 * On top, tokens are issued and logged out at the rate that fills the deny set to its
 * steady state if every token ended by Logout: deny TTL / token lifetime of them.
 */
export async function measureTokenMemory (options: MemoryOptions): Promise<MemoryFigure> {
  const own = await throwawayRedis()
  const url = own?.url ?? options.fallbackUrl
  const admin = new Redis(url)
  if (own === undefined) await admin.flushdb()
  const store = createRedisTokenStore({ url, denyTtlMs: options.denyTtlSeconds * 1000, commandTimeoutMs: 10_000 })
  try {
    await store.ready()
    // Load the scripts before the first reading, so their cache is not counted per token.
    await store.isDenied(hashToken(generateToken('x')))
    const before = Number(await info(admin, 'memory', 'used_memory'))

    const random = seededRandom(6)
    const now = Date.now()
    const owners: Array<{ id: string, username: string, federated: boolean }> = []
    for (let account = 0; owners.length < options.tokens; account++) {
      const federated = random() < 0.05
      const owner = { id: String(100_000 + account), username: accountName(account), federated }
      do {
        owners.push(owner)
      } while (random() < 0.5 && owners.length < options.tokens)
    }
    const accounts = new Set(owners.map((owner) => owner.id)).size
    const issueFor = async (owner: { id: string, username: string, federated: boolean }): Promise<string> => {
      const ttlMs = (owner.federated ? options.federatedTokenTtlSeconds : options.tokenTtlSeconds) * 1000
      const record: TokenRecord = { accountId: owner.id, username: owner.username, federated: owner.federated, expiresAt: Math.floor((now + ttlMs) / 1000) * 1000 }
      const tokenHash = hashToken(generateToken(owner.id))
      await store.issue(tokenHash, record, ttlMs)
      return tokenHash
    }
    for (let start = 0; start < owners.length; start += 500) {
      await Promise.all(owners.slice(start, start + 500).map(issueFor))
    }
    const denied = Math.round(options.tokens * options.denyTtlSeconds / options.tokenTtlSeconds)
    const ended = await Promise.all(owners.slice(0, denied).map(issueFor))
    await Promise.all(ended.map(async (tokenHash) => await store.terminate(tokenHash)))

    const after = Number(await info(admin, 'memory', 'used_memory'))
    // Each account's keys are in its bucket's: `{atsAb}t<digest>`, `{atsAb}a<accountId>`, `{atsAb}deny`.
    const layout = keyLayout(DEFAULT_KEY_PREFIX)
    const tokenKeys = await memoryUsage(admin, `${layout.bucketPrefix('??')}t*`)
    const indexes = await memoryUsage(admin, `${layout.bucketPrefix('??')}a*`)
    const denySet = await memoryUsage(admin, `${layout.bucketPrefix('??')}deny`)
    const sampleOwner = owners[0]?.id ?? ''
    const sampleIndex = `${layout.bucketPrefix(accountBucket(sampleOwner))}a${sampleOwner}`
    return {
      tokens: options.tokens,
      accounts,
      denied,
      usedMemoryBefore: before,
      usedMemoryAfter: after,
      bytesPerToken: (after - before) / options.tokens,
      tokenKeysPerToken: tokenKeys / options.tokens,
      indexPerToken: indexes / options.tokens,
      denySetPerToken: denySet / options.tokens,
      indexEncoding: String(await admin.object('ENCODING', sampleIndex)),
      where: own === undefined ? `${url} (shared server, flushed first)` : 'a throwaway redis-server of the same installation',
      redisVersion: await info(admin, 'server', 'redis_version')
    }
  } finally {
    await store.close()
    if (own === undefined) await admin.flushdb().catch(() => {})
    admin.disconnect()
    await own?.stop()
  }
}
