import { createRedisClient, DEFAULT_KEY_PREFIX, type RedisClient, type RedisTopology } from './client.js'
import { createFinder } from './batched-find.js'
import { createRevocationFeed } from './revocation-feed.js'
import { SCRIPTS, type ScriptCommands } from './scripts.js'
import { serviceUnavailable, StatusError } from '../../http/status.js'
import { decodeRecord, encodeRecord } from '../../tokens/record.js'
import type { RevocationFeed } from '../revocation-feed.js'
import type { TokenStore } from '../token-store.js'

export interface RedisTokenStoreOptions {
  /** A client to use (not closed by the store), or a URL or topology for a client the store owns. */
  redis?: RedisClient
  url?: string
  topology?: RedisTopology
  keyPrefix?: string
  denyTtlMs: number
  /** Upper bound on any one command; past it the caller gets a 503, not a hang. */
  commandTimeoutMs?: number
  /** Errors of the connection the store owns (reconnects are automatic). */
  onError?: (error: Error) => void
  /** Any command that failed (timeout, refused write, no connection), before it becomes a 503. */
  onCommandError?: (error: unknown) => void
}

export interface RedisTokenStore extends TokenStore, RevocationFeed {
  readonly kind: 'redis'
  /** The store's client: the login limiter runs its scripts on the same connection. */
  readonly redis: RedisClient
}

export function createRedisTokenStore (options: RedisTokenStoreOptions): RedisTokenStore {
  const owned = options.redis === undefined
  const redis = options.redis ?? createRedisClient(options.topology ?? { kind: 'single', url: options.url ?? 'redis://127.0.0.1:6379' }, options.commandTimeoutMs ?? 500)
  if (owned) redis.on('error', options.onError ?? (() => {}))
  for (const [name, script] of Object.entries(SCRIPTS)) redis.defineCommand(name, script)
  const commands = redis as unknown as ScriptCommands

  const prefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX
  const tokenPrefix = `${prefix}t:`
  const indexPrefix = `${prefix}a:`
  const denyKey = `${prefix}deny`
  const channel = `${prefix}revoked`
  const feed = createRevocationFeed(redis, channel)
  const denyTtlMs = options.denyTtlMs

  async function guarded<T> (work: () => Promise<T>): Promise<T> {
    try {
      return await work()
    } catch (error) {
      if (error instanceof StatusError) throw error
      options.onCommandError?.(error)
      throw serviceUnavailable('redis', error)
    }
  }

  const ttl = (ttlMs: number): number => Math.max(1, Math.floor(ttlMs))

  return {
    kind: 'redis',
    redis,
    async ready () {
      if (redis.status === 'ready') return
      if (redis.status === 'wait') await redis.connect()
      if ((redis.status as string) !== 'ready') {
        await new Promise<void>((resolve, reject) => {
          const onReady = (): void => { redis.off('end', onEnd); resolve() }
          const onEnd = (): void => { redis.off('ready', onReady); reject(new Error('Redis connection ended')) }
          redis.once('ready', onReady)
          redis.once('end', onEnd)
        })
      }
    },
    issue: async (tokenHash, record, ttlMs) => await guarded(async () => {
      await commands.atsIssue(tokenPrefix + tokenHash, indexPrefix + record.accountId, encodeRecord(record), ttl(ttlMs), tokenHash, tokenPrefix)
    }),
    find: createFinder(redis, tokenPrefix, options.onCommandError),
    refresh: async (tokenHash, record, ttlMs) => await guarded(async () =>
      await commands.atsRefresh(tokenPrefix + tokenHash, indexPrefix + record.accountId, encodeRecord(record), ttl(ttlMs), tokenHash, record.accountId) === 1),
    terminate: async (tokenHash) => await guarded(async () => {
      const ended = await commands.atsTerminate(tokenPrefix + tokenHash, denyKey, tokenHash, denyTtlMs, indexPrefix, channel)
      return ended === null ? null : decodeRecord(ended)
    }),
    terminateAccount: async (accountId) => await guarded(async () =>
      await commands.atsTerminateAccount(indexPrefix + accountId, denyKey, tokenPrefix, denyTtlMs, channel)),
    isDenied: async (tokenHash) => await guarded(async () =>
      (await commands.atsDenied(denyKey, tokenHash)).length > 0),
    listDenied: async () => await guarded(async () => await commands.atsDenied(denyKey, '')),
    watchRevocations: (watcher) => feed.watch(watcher),
    ping: async () => { await guarded(async () => await redis.ping()) },
    async close () {
      await feed.close()
      // Never close a client we were handed.
      if (owned) await redis.quit().catch(() => { redis.disconnect() })
    }
  }
}
