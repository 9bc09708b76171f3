import { createRedisClient, DEFAULT_KEY_PREFIX, type RedisClient, type RedisTopology } from './client.js'
import { createFinder } from './batched-find.js'
import { evictingPolicy, EvictionPolicyError } from './eviction.js'
import { LossyPersistenceError, readPersistence, undoesRevocations, type Persistence } from './persistence.js'
import { createRevocationFeed } from './revocation-feed.js'
import { keyLayout, type Place } from './keys.js'
import { createReplicaAcks, type MinReplicaAcks } from './replica-acks.js'
import { PRUNE_BATCH, REVOKE_BATCH, SCRIPTS, SCRIPTS_V2, type ScriptCommands, type ScriptCommandsV2 } from './scripts.js'
import { serviceUnavailable, StatusError, UnavailableError } from '../../errors/status.js'
import { decodeRecord, encodeRecord, type TokenRecord } from '../../tokens/record.js'
import { accountBucket, ALL_BUCKETS } from '../../tokens/token.js'
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
   * failover could undo (issue 23).
   */
  replicaAckTimeoutMs?: number
  /**
   * Replica acknowledgements every revocation needs, or 'auto' (default): one wherever the
   * topology says the master is meant to have a replica, connected now or not (issue 29 §1,
   * replica-acks.ts).
   */
  minReplicaAcks?: MinReplicaAcks
}

/** No replica acknowledged a revocation in time: it holds on the master, but a failover could lose it. */
export class ReplicaAckTimeout extends Error {
  constructor (readonly timeoutMs: number) {
    super(`no replica acknowledged the revocation within ${timeoutMs} ms`)
    this.name = 'ReplicaAckTimeout'
  }
}

export interface RedisTokenStore extends TokenStore, RevocationFeed {
  readonly kind: 'redis'
  /** The store's client: the login limiter runs its scripts on the same connection. */
  readonly redis: RedisClient
  /** The key Authenticate GETs for a token hash (its bucket's, or the legacy place's). */
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
  for (const [name, script] of Object.entries({ ...SCRIPTS, ...SCRIPTS_V2 })) redis.defineCommand(name, script)
  const commands = redis as unknown as ScriptCommands & ScriptCommandsV2

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
  const keys = keyLayout(prefix)
  const ackTimeoutMs = options.replicaAckTimeoutMs ?? Math.min(250, Math.floor((options.commandTimeoutMs ?? 500) / 2))
  const acks = createReplicaAcks(redis, options.minReplicaAcks ?? 'auto', { commandTimeoutMs: options.commandTimeoutMs })

  /**
   * A revocation acknowledged to a client must survive a failover: when the master that took
   * it (the node serving `key`'s slot) has or is meant to have replicas (replica-acks.ts: a
   * cut-off replica counts), WAIT on the connection that wrote it until enough have it.
   * `replicas`: connected ones, as the script counted them; undefined: ask the node (INFO).
   */
  async function replicated (key: string, replicas: number | undefined): Promise<void> {
    if (replicas === undefined) {
      const asked = await redis.pipeline().pttl(key).info('replication').exec()
      const info = asked?.[1]?.[1]
      replicas = Number(/connected_slaves:(\d+)/.exec(typeof info === 'string' ? info : '')?.[1] ?? 0)
    }
    const needed = await acks.required(key, replicas)
    if (needed === 0) return
    // The PTTL routes the pipeline (and the keyless WAIT in it) to that node's connection.
    const waited = await redis.pipeline().pttl(key).wait(needed, ackTimeoutMs).exec()
    const acknowledged = waited?.[1]?.[1]
    if (typeof acknowledged !== 'number' || acknowledged < needed) {
      acks.stale()
      throw new UnavailableError('redis', new ReplicaAckTimeout(ackTimeoutMs), { 'retry-after': '1' })
    }
  }

  const bucketOf = (place: Place): string => place.bucket ?? ''
  /** Ends `members` of a bucket (removed from `from`, an index or a drain); returns [ended hashes, next members, replicas]. */
  async function endMembers (place: Place, from: string, members: string[], next: number): Promise<[string[], string[], number]> {
    const bucket = bucketOf(place)
    const [ended, following, replicas] = await commands.ats2End(2 + members.length, from, `${place.prefix}deny`,
      ...members.map((member) => `${place.prefix}t${member}`), denyTtlMs, channel, bucket, next, ...members)
    return [ended.map((member) => keys.hashOf(bucket, member)), following, replicas]
  }
  const accountPlace = (accountId: string): Place => {
    const bucket = accountBucket(accountId)
    return { bucket, prefix: keys.bucketPrefix(bucket), member: '' }
  }

  async function issueInBucket (place: Place, record: TokenRecord, ttlMs: number, epoch: number | undefined): Promise<boolean> {
    const { prefix: p, member } = place
    if (place.bucket !== accountBucket(record.accountId)) throw new TypeError('a token hash issued to an account of another bucket')
    const index = `${p}a${record.accountId}`
    const [issued, ...over] = await commands.ats2Issue(`${p}t${member}`, index, `${p}e${record.accountId}`,
      encodeRecord(record), ttl(ttlMs), member, epochArg(epoch), maxTokens, PRUNE_BATCH)
    if (issued === 0) return false
    // Past the cap: the account's oldest end (a second script: its keys are named in KEYS). Should it
    // fail, the token stands and the next Login of the account ends them.
    if (over.length > 0) await endMembers(place, index, over, 0).catch((error: unknown) => { options.onCommandError?.(error) })
    return true
  }

  async function terminateInBucket (tokenHash: string, place: Place): Promise<TokenRecord | null> {
    const key = `${place.prefix}t${place.member}`
    const value = await redis.get(key)
    const found = value === null ? null : decodeRecord(value)
    if (found === null) return null
    const [ended, replicas] = await commands.ats2Terminate(key, `${place.prefix}a${found.accountId}`, `${place.prefix}deny`,
      place.member, found.accountId, denyTtlMs, channel, tokenHash)
    if (ended === '') return null
    await replicated(key, replicas)
    return decodeRecord(ended)
  }

  /**
   * A revoke-all: in the account's bucket and in the legacy place alike, its epoch recorded and
   * its index set aside in one step (both steps sent at once, before anything else of this
   * call), then drained a batch a script. Exact against racing Logins, as before issue 23.
   */
  async function terminateAccountEverywhere (accountId: string, epoch: number | undefined, ended: string[], exceptTokenHash: string | undefined): Promise<void> {
    const place = accountPlace(accountId)
    // The one token a password change keeps (issue 21): taken back into the fresh index in the begin step, where it lives.
    const except = exceptTokenHash === undefined ? undefined : keys.placeOf(exceptTokenHash)
    const exceptInBucket = except !== undefined && except.bucket === place.bucket ? except.member : ''
    const exceptLegacy = except !== undefined && except.bucket === undefined ? except.member : ''
    const drain = `${place.prefix}r${accountId}`
    const epochKey = `${place.prefix}e${accountId}`
    const index = indexPrefix + accountId
    const drains = `${index}:revoking`
    const [bucketBegun, legacyBegun] = await Promise.allSettled([
      commands.ats2RevokeBegin(`${place.prefix}a${accountId}`, epochKey, drain, epochArg(epoch), epochTtlMs, REVOKE_BATCH, exceptInBucket),
      commands.atsRevokeBegin(index, epochPrefix + accountId, drains, `${index}:revocations`, epochArg(epoch), epochTtlMs, exceptLegacy)
    ])
    if (bucketBegun.status === 'rejected') throw bucketBegun.reason
    if (legacyBegun.status === 'rejected') throw legacyBegun.reason
    let [members, replicas] = bucketBegun.value
    while (members.length > 0) {
      const [hashes, next, counted] = await endMembers(place, drain, members, REVOKE_BATCH)
      for (const hash of hashes) ended.push(hash)
      members = next
      replicas = Math.max(replicas, counted)
    }
    const endedInBucket = ended.length
    if (epoch !== undefined || endedInBucket > 0) await replicated(epochKey, replicas)
    // The legacy place's set-aside indexes, REVOKE_BATCH tokens a script: other commands run in between.
    for (;;) {
      const [left, ...hashes] = await commands.atsRevokeBatch(drains, denyKey, tokenPrefix, denyTtlMs, channel, REVOKE_BATCH)
      for (const hash of hashes) ended.push(hash)
      if (left === 0) break
    }
    if (epoch !== undefined || ended.length > endedInBucket) await replicated(epochPrefix + accountId, undefined)
  }

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
  let persisting: Persistence | undefined
  let lossy: LossyPersistenceError | undefined
  const checkPersistence = async (): Promise<Persistence> => {
    const found = await readPersistence(redis)
    const before = persisting
    persisting = found
    lossy = undoesRevocations(found) && options.acceptLossyPersistence !== true ? new LossyPersistenceError(found) : undefined
    if (before !== undefined && before.settings !== found.settings) options.onPersistence?.(found, lossy)
    return found
  }
  const checkPolicy = async (): Promise<void> => {
    const [policy] = await Promise.all([evictingPolicy(redis), checkPersistence()])
    const before = evicting
    evicting = policy === undefined ? undefined : new EvictionPolicyError(policy)
    if (evicting !== undefined && before?.policy !== evicting.policy) options.onEvictionPolicy?.(evicting)
  }
  /** Either refusal: an evicting Redis may drop what revocations rely on; a lossy one may bring ended tokens back. */
  const refusal = (): Error | undefined => evicting ?? lossy
  const refuseWhileUnsafe = (): void => {
    const refused = refusal()
    if (refused !== undefined) throw new UnavailableError('redis', refused)
  }
  let policyTimer: NodeJS.Timeout | undefined
  if (requireNoEviction) {
    redis.on('ready', () => { checkPolicy().catch(() => {}) })
    policyTimer = setInterval(() => { if (redis.status === 'ready') checkPolicy().catch(() => {}) }, 10_000)
    policyTimer.unref()
  }
  const finder = createFinder(redis, keys.tokenKey, options.onCommandError, options.expireOnRead ?? true)

  return {
    kind: 'redis',
    redis,
    tokenKey: keys.tokenKey,
    persistence: async () => await guarded(checkPersistence),
    get lastPersistence () { return persisting },
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
      refuseWhileUnsafe()
      const place = keys.placeOf(tokenHash)
      if (place.bucket !== undefined) return await issueInBucket(place, record, ttlMs, epoch)
      return await commands.atsIssue(tokenPrefix + tokenHash, indexPrefix + record.accountId, epochPrefix + record.accountId, denyKey,
        encodeRecord(record), ttl(ttlMs), tokenHash, tokenPrefix, epochArg(epoch), maxTokens, denyTtlMs, channel, PRUNE_BATCH) === 1
    }),
    find: requireNoEviction
      ? (tokenHash) => {
          const refused = refusal()
          return refused === undefined ? finder(tokenHash) : Promise.reject(new UnavailableError('redis', refused))
        }
      : finder,
    refresh: async (tokenHash, record, ttlMs, epoch) => await guarded(async () => {
      refuseWhileUnsafe()
      const place = keys.placeOf(tokenHash)
      if (place.bucket !== undefined) {
        const p = place.prefix
        return await commands.ats2Refresh(`${p}t${place.member}`, `${p}a${record.accountId}`, `${p}e${record.accountId}`,
          encodeRecord(record), ttl(ttlMs), place.member, record.accountId, epochArg(epoch)) === 1
      }
      return await commands.atsRefresh(tokenPrefix + tokenHash, indexPrefix + record.accountId, epochPrefix + record.accountId,
        encodeRecord(record), ttl(ttlMs), tokenHash, record.accountId, epochArg(epoch)) === 1
    }),
    terminate: async (tokenHash) => await guarded(async () => {
      // A Logout acknowledged on a Redis that may bring the token back is a promise not kept: 503.
      if (lossy !== undefined) throw new UnavailableError('redis', lossy)
      const place = keys.placeOf(tokenHash)
      if (place.bucket !== undefined) return await terminateInBucket(tokenHash, place)
      const ended = await commands.atsTerminate(tokenPrefix + tokenHash, denyKey, tokenHash, denyTtlMs, indexPrefix, channel)
      if (ended === null) return null
      await replicated(tokenPrefix + tokenHash, undefined)
      return decodeRecord(ended)
    }),
    terminateAccount: async (accountId, epoch, exceptTokenHash) => await guarded(async () => {
      if (lossy !== undefined) throw new UnavailableError('redis', lossy)
      // The account's bucket, then the legacy place (tokens issued before issue 23, until they expire).
      const ended: string[] = []
      try {
        await terminateAccountEverywhere(accountId, epoch, ended, exceptTokenHash)
        return ended
      } catch (error) {
        if (error instanceof UnavailableError && error.cause instanceof ReplicaAckTimeout) throw error
        options.onCommandError?.(error)
        // The epoch is recorded and the rest stays set aside: the next revoke-all ends it.
        throw new RevocationIncomplete(ended.length, error)
      }
    }),
    isDenied: async (tokenHash) => await guarded(async () => {
      const place = keys.placeOf(tokenHash)
      return (await commands.atsDenied(`${place.prefix}deny`, place.member)).length > 0
    }),
    // The legacy deny set (its script drops expired entries) and every bucket's: 1,024 plain
    // ZRANGEs sent together (no script: a Lua call each cost a Cluster under load its command
    // timeout). A bucket's list may hold entries a few moments past their deny time (they are
    // pruned as the bucket takes new ones, and the key expires with its last entry): a catch-up
    // list of ended tokens, so one too many only drops a cache entry of an ended token.
    listDenied: async () => await guarded(async () => (await Promise.all([
      commands.atsDenied(denyKey, ''),
      ...ALL_BUCKETS.map(async (bucket) => (await redis.zrange(`${keys.bucketPrefix(bucket)}deny`, '0', '-1')).map((member) => keys.hashOf(bucket, member)))
    ])).flat()),
    watchRevocations: (watcher) => feed.watch(watcher),
    ping: async () => {
      await guarded(async () => {
        await redis.ping()
        if (requireNoEviction) await checkPolicy()
      })
      refuseWhileUnsafe()
    },
    async close () {
      clearInterval(policyTimer)
      acks.close()
      await feed.close()
      // Never close a client we were handed.
      if (owned) await redis.quit().catch(() => { redis.disconnect() })
    }
  }
}
