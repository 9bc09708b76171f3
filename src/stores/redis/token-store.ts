import { createRedisClient, DEFAULT_KEY_PREFIX, type RedisClient, type RedisTopology } from './client.js'
import { createFinder } from './batched-find.js'
import { evictingPolicy, EvictionPolicyError } from './eviction.js'
import { createRevocationFeed } from './revocation-feed.js'
import { PRUNE_BATCH, REVOKE_BATCH, SCRIPTS, type ScriptCommands } from './scripts.js'
import { serviceUnavailable, StatusError, UnavailableError } from '../../http/status.js'
import { decodeRecord, encodeRecord } from '../../tokens/record.js'
import type { RevocationFeed } from '../revocation-feed.js'
import { RevocationIncomplete, type TokenStore } from '../token-store.js'

export interface RedisTokenStoreOptions {
  /** A client to use (not closed by the store), or a URL or topology for a client the store owns. */
  redis?: RedisClient
  url?: string
  topology?: RedisTopology
  keyPrefix?: string
  denyTtlMs: number
  /** How long an account's revocation epoch is kept: at least the longest token lifetime (default 24 h). */
  epochTtlMs?: number
  /** Active tokens one account may hold; a Login beyond it ends the account's oldest (default 1000). */
  maxTokensPerAccount?: number
  /** Upper bound on any one command; past it the caller gets a 503, not a hang. */
  commandTimeoutMs?: number
  /** Errors of the connection the store owns (reconnects are automatic). */
  onError?: (error: Error) => void
  /** Any command that failed (timeout, refused write, no connection), before it becomes a 503. */
  onCommandError?: (error: unknown) => void
  /**
   * Refuse to issue, refresh and find tokens (503; readiness fails) while Redis may evict keys
   * (eviction.ts). Default true; a guard, which only reads, may turn it off.
   */
  requireNoEviction?: boolean
  /** Told once each time Redis is found with an evicting policy (for a clear log line). */
  onEvictionPolicy?: (error: EvictionPolicyError) => void
  /**
   * Refuse a found record whose `expiresAt` has come by this process's wall clock (default
   * true: the service's answers). A guard on another machine turns it off: its clock may be
   * wrong, and the key's own expiry (Redis's clock, a few ms past the named second) bounds it.
   */
  expireOnRead?: boolean
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
  const epochPrefix = `${prefix}e:`
  const epochTtlMs = options.epochTtlMs ?? 86_400_000
  const maxTokens = options.maxTokensPerAccount ?? 1000
  const epochArg = (epoch: number | undefined): string => epoch === undefined ? '' : String(epoch)
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

  // Checked when the connection is (re)established, at every readiness ping and every 10 s.
  const requireNoEviction = options.requireNoEviction ?? true
  let evicting: EvictionPolicyError | undefined
  const checkPolicy = async (): Promise<void> => {
    const policy = await evictingPolicy(redis)
    const before = evicting
    evicting = policy === undefined ? undefined : new EvictionPolicyError(policy)
    if (evicting !== undefined && before?.policy !== evicting.policy) options.onEvictionPolicy?.(evicting)
  }
  const refuseWhileEvicting = (): void => {
    if (evicting !== undefined) throw new UnavailableError('redis', evicting)
  }
  let policyTimer: NodeJS.Timeout | undefined
  if (requireNoEviction) {
    redis.on('ready', () => { checkPolicy().catch(() => {}) })
    policyTimer = setInterval(() => { if (redis.status === 'ready') checkPolicy().catch(() => {}) }, 10_000)
    policyTimer.unref()
  }
  const finder = createFinder(redis, tokenPrefix, options.onCommandError, options.expireOnRead ?? true)

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
    issue: async (tokenHash, record, ttlMs, epoch) => await guarded(async () => {
      refuseWhileEvicting()
      return await commands.atsIssue(tokenPrefix + tokenHash, indexPrefix + record.accountId, epochPrefix + record.accountId, denyKey,
        encodeRecord(record), ttl(ttlMs), tokenHash, tokenPrefix, epochArg(epoch), maxTokens, denyTtlMs, channel, PRUNE_BATCH) === 1
    }),
    find: requireNoEviction
      ? (tokenHash) => evicting === undefined ? finder(tokenHash) : Promise.reject(new UnavailableError('redis', evicting))
      : finder,
    refresh: async (tokenHash, record, ttlMs, epoch) => await guarded(async () => {
      refuseWhileEvicting()
      return await commands.atsRefresh(tokenPrefix + tokenHash, indexPrefix + record.accountId, epochPrefix + record.accountId,
        encodeRecord(record), ttl(ttlMs), tokenHash, record.accountId, epochArg(epoch)) === 1
    }),
    terminate: async (tokenHash) => await guarded(async () => {
      const ended = await commands.atsTerminate(tokenPrefix + tokenHash, denyKey, tokenHash, denyTtlMs, indexPrefix, channel)
      return ended === null ? null : decodeRecord(ended)
    }),
    terminateAccount: async (accountId, epoch, exceptTokenHash) => await guarded(async () => {
      const index = indexPrefix + accountId
      const drains = `${index}:revoking`
      await commands.atsRevokeBegin(index, epochPrefix + accountId, drains, `${index}:revocations`, epochArg(epoch), epochTtlMs, exceptTokenHash ?? '')
      // The set-aside indexes, REVOKE_BATCH tokens a script: other commands run in between.
      const ended: string[] = []
      try {
        for (;;) {
          const [left, ...hashes] = await commands.atsRevokeBatch(drains, denyKey, tokenPrefix, denyTtlMs, channel, REVOKE_BATCH)
          for (const hash of hashes) ended.push(hash)
          if (left === 0) return ended
        }
      } catch (error) {
        options.onCommandError?.(error)
        // The epoch is recorded and the rest stays set aside: the next revoke-all ends it.
        throw new RevocationIncomplete(ended.length, error)
      }
    }),
    isDenied: async (tokenHash) => await guarded(async () =>
      (await commands.atsDenied(denyKey, tokenHash)).length > 0),
    listDenied: async () => await guarded(async () => await commands.atsDenied(denyKey, '')),
    watchRevocations: (watcher) => feed.watch(watcher),
    ping: async () => {
      await guarded(async () => {
        await redis.ping()
        if (requireNoEviction) await checkPolicy()
      })
      refuseWhileEvicting()
    },
    async close () {
      clearInterval(policyTimer)
      await feed.close()
      // Never close a client we were handed.
      if (owned) await redis.quit().catch(() => { redis.disconnect() })
    }
  }
}
