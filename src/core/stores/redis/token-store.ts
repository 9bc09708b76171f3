import { DEFAULT_KEY_PREFIX, keyLayout, revocationChannel } from '@auth-token-service/protocol/layout'
import { createRevocationFeed } from '@auth-token-service/protocol/redis-feed'
import { whenReady, type RedisClient } from '@auth-token-service/protocol/redis-connection'
import { createRedisClient, type RedisTopology } from './client.js'
import { createRedisApiKeyRecords } from './api-keys.js'
import { createFinder } from './batched-find.js'
import { createDenyList } from './deny-list.js'
import { createMemberEnder } from './end-members.js'
import type { EvictionPolicyError } from './eviction.js'
import { createIssuing } from './issue.js'
import type { LossyPersistenceError, Persistence } from './persistence.js'
import { createReplicaAcks, type MinReplicaAcks } from './replica-acks.js'
import { createReplicationWait, ReplicaAckTimeout } from './replicated.js'
import { createRevoking } from './revoke.js'
import { createSafety } from './safety.js'
import { defineScripts } from './scripts.js'
import { createIdleTracking } from './idle.js'
import { createRegroup } from './regroup.js'
import { serviceUnavailable, StatusError, UnavailableError } from '../../../errors/status.js'
import type { RevocationFeed } from '../revocation-feed.js'
import { RevocationIncomplete, type TokenStore } from '../token-store.js'
import type { ApiKeyRecords } from '../api-key-records.js'
import type { TokenRecord } from '@auth-token-service/protocol/layout'

export { ReplicaAckTimeout } from './replicated.js'

/*
 * The Redis token store, put together from parts that each read alone:
 *   the guard package's layout.ts: where a token hash's keys live (its account's bucket: one
 *                   Cluster slot), the record's format, the revocation channel; shared with the guard
 *   scripts.ts      the Lua scripts, one per multi-step write
 *   issue.ts        Login's writes: issue (with the per-account cap) and refresh
 *   batched-find.ts Authenticate's read: GETs batched into MGETs
 *   revoke.ts       Logout and revoke-all, each acknowledged once replicated (replicated.ts,
 *                   replica-acks.ts); end-members.ts ends a batch of an account's tokens
 *   regroup.ts      an account's groups changed: its live records rewritten, caches told
 *   deny-list.ts    the ended tokens, for caches; the guard package's shared/redis-feed.ts follows them as they end
 *   safety.ts       refusing to serve from an evicting or lossy Redis (eviction.ts, persistence.ts)
 * This file holds the options, the connection's life, and the mapping of every failure to a 503.
 */

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
   * Refuse every token operation (503; readiness fails) while Redis persists in a way that can
   * undo an acknowledged revocation on a restart (persistence.ts), unless `acceptLossyPersistence`.
   * Read with the eviction policy; off with `requireNoEviction: false` (a guard only reads).
   */
  acceptLossyPersistence?: boolean
  /** Told of Redis's persistence whenever it changes from an earlier reading (for a clear log line; the start reads it itself). */
  onPersistence?: (persistence: Persistence, refused: LossyPersistenceError | undefined) => void
  /**
   * Refuse a found record whose `expiresAt` has come by this process's wall clock (default
   * true: the service's answers). A guard on another machine turns it off: its clock may be
   * wrong, and the key's own expiry (Redis's clock, a few ms past the named second) bounds it.
   */
  expireOnRead?: boolean
  /**
   * After a revocation (terminate, terminateAccount), when the master that took it has
   * replicas: WAIT until one of them has it, at most this long (default: half the command
   * timeout, at most 250 ms); none in time is a 503, so no revocation is acknowledged that a
   * failover could undo.
   */
  replicaAckTimeoutMs?: number
  /**
   * Replica acknowledgements every revocation needs, or 'auto' (default): one wherever the
   * topology says the master is meant to have a replica, connected now or not
   * (replica-acks.ts).
   */
  minReplicaAcks?: MinReplicaAcks
  /**
   * AUTH_IDLE_TIMEOUT_SECONDS in ms: a Login token not presented for this long is
   * refused (idle.ts). Absent: off, and Authenticate reads exactly what it always did.
   */
  idleTimeoutMs?: number | undefined
}

export interface RedisTokenStore extends TokenStore, ApiKeyRecords, RevocationFeed {
  readonly kind: 'redis'
  /** The store's client: the login limiter runs its scripts on the same connection. */
  readonly redis: RedisClient
  /** The key Authenticate GETs for a token hash (its bucket's); a TypeError for a string that is no token hash. */
  tokenKey (tokenHash: string): string
  /** Reads Redis's persistence now (and refuses or serves by it, as the periodic check does). */
  persistence (): Promise<Persistence>
  /** The persistence last read (at a (re)connection, a readiness check, every 10 s); undefined before the first. */
  readonly lastPersistence: Persistence | undefined
}

export function createRedisTokenStore (options: RedisTokenStoreOptions): RedisTokenStore {
  const owned = options.redis === undefined
  const redis = options.redis ?? createRedisClient(options.topology ?? { kind: 'single', url: options.url ?? 'redis://127.0.0.1:6379' }, options.commandTimeoutMs ?? 500)
  if (owned) redis.on('error', options.onError ?? (() => {}))
  const commands = defineScripts(redis)

  const prefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX
  const channel = revocationChannel(prefix)
  const denyTtlMs = options.denyTtlMs
  const keys = keyLayout(prefix)
  const feed = createRevocationFeed(redis, channel)
  const acks = createReplicaAcks(redis, options.minReplicaAcks ?? 'auto', { commandTimeoutMs: options.commandTimeoutMs })
  const ackTimeoutMs = options.replicaAckTimeoutMs ?? Math.min(250, Math.floor((options.commandTimeoutMs ?? 500) / 2))
  const endMembers = createMemberEnder({ commands, keys, denyTtlMs, channel })
  const issuing = createIssuing({ commands, keys, maxTokens: options.maxTokensPerAccount ?? 1000, endMembers, onCommandError: options.onCommandError })
  const replicated = createReplicationWait(redis, acks, ackTimeoutMs)
  const revoking = createRevoking({
    redis, commands, keys, endMembers, replicated, denyTtlMs, epochTtlMs: options.epochTtlMs ?? 86_400_000, channel
  })
  const apiKeys = createRedisApiKeyRecords({ redis, keys, replicated, denyTtlMs, channel })
  const regroup = createRegroup({ redis, keys, replicated, channel, changeTtlMs: options.epochTtlMs ?? 86_400_000 })
  const denyList = createDenyList(redis, commands, keys)
  const requireNoEviction = options.requireNoEviction ?? true
  const safety = createSafety(redis, {
    requireNoEviction, acceptLossyPersistence: options.acceptLossyPersistence, onEvictionPolicy: options.onEvictionPolicy, onPersistence: options.onPersistence
  })
  const idle = options.idleTimeoutMs === undefined
    ? undefined
    : createIdleTracking({ redis, keys, idleTimeoutMs: options.idleTimeoutMs, onCommandError: options.onCommandError, expireOnRead: options.expireOnRead ?? true })
  // Off, the batched finder as ever (a peek is a find: nothing to touch).
  const finder: (tokenHash: string, peek?: boolean) => Promise<TokenRecord | null> = idle?.find ?? createFinder(redis, keys.keyOf, options.onCommandError, options.expireOnRead ?? true)

  /** Any failure but a StatusError (already an answer) is told to onCommandError and becomes a 503. */
  async function guarded<T> (work: () => Promise<T>): Promise<T> {
    try {
      return await work()
    } catch (error) {
      if (error instanceof StatusError) throw error
      options.onCommandError?.(error)
      throw serviceUnavailable('redis', error)
    }
  }
  /** A revocation acknowledged on a Redis that may bring the token back is a promise not kept: 503. */
  const refuseWhileLossy = (): void => {
    const lossy = safety.lossy()
    if (lossy !== undefined) throw new UnavailableError('redis', lossy)
  }

  return {
    kind: 'redis',
    redis,
    tokenKey: keys.tokenKey,
    persistence: async () => await guarded(safety.checkPersistence),
    get lastPersistence () { return safety.lastPersistence },
    ready: async () => { await whenReady(redis) },
    issue: async (tokenHash, record, ttlMs, epoch, groupsVersion) => await guarded(async () => {
      safety.refuseWhileUnsafe()
      await idle?.arm(tokenHash)
      return await issuing.issue(tokenHash, record, ttlMs, epoch, groupsVersion)
    }),
    issueUnder: async (parentHash, tokenHash, record, ttlMs, epoch, groupsVersion) => await guarded(async () => {
      safety.refuseWhileUnsafe()
      return await issuing.issueUnder(parentHash, tokenHash, record, ttlMs, epoch, groupsVersion)
    }),
    find: requireNoEviction
      ? (tokenHash, peek) => {
          const refused = safety.refusal()
          return refused === undefined ? finder(tokenHash, peek) : Promise.reject(new UnavailableError('redis', refused))
        }
      : finder,
    refresh: async (tokenHash, record, ttlMs, epoch, groupsVersion) => await guarded(async () => {
      safety.refuseWhileUnsafe()
      if (idle !== undefined) {
        // An idle token is not brought back: the Login gets a new one.
        if (!await idle.alive(tokenHash)) return false
        await idle.arm(tokenHash)
      }
      return await issuing.refresh(tokenHash, record, ttlMs, epoch, groupsVersion)
    }),
    regroup: async (accountId, groups, version, keyHashes) => await guarded(async () => {
      refuseWhileLossy()
      return await regroup(accountId, groups, version, keyHashes)
    }),
    terminate: async (tokenHash) => await guarded(async () => {
      refuseWhileLossy()
      return await revoking.terminate(tokenHash)
    }),
    seedKey: async (keyHash, record, ttlMs, groupsVersion) => await guarded(async () => {
      safety.refuseWhileUnsafe()
      return await apiKeys.seedKey(keyHash, record, ttlMs, groupsVersion)
    }),
    endKey: async (keyHash) => await guarded(async () => {
      refuseWhileLossy()
      await apiKeys.endKey(keyHash)
    }),
    endKeys: async (keyHashes) => await guarded(async () => {
      refuseWhileLossy()
      await apiKeys.endKeys(keyHashes)
    }),
    terminateAccount: async (accountId, epoch, exceptTokenHash) => await guarded(async () => {
      refuseWhileLossy()
      const ended: string[] = []
      try {
        await revoking.terminateAccount(accountId, epoch, exceptTokenHash, ended)
        return ended
      } catch (error) {
        if (error instanceof UnavailableError && error.cause instanceof ReplicaAckTimeout) throw error
        options.onCommandError?.(error)
        // The epoch is recorded and the rest stays set aside: the next revoke-all ends it.
        throw new RevocationIncomplete(ended.length, error)
      }
    }),
    isDenied: async (tokenHash) => await guarded(async () => await denyList.isDenied(tokenHash)),
    listDenied: async () => await guarded(denyList.listDenied),
    watchRevocations: (watcher) => feed.watch(watcher),
    ping: async () => {
      await guarded(async () => {
        await redis.ping()
        await safety.check()
      })
      safety.refuseWhileUnsafe()
    },
    async close () {
      safety.close()
      acks.close()
      await feed.close()
      // Never close a client we were handed.
      if (owned) await redis.quit().catch(() => { redis.disconnect() })
    }
  }
}
