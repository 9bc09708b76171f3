import { createRedisClient, DEFAULT_KEY_PREFIX, duplicateForSubscribing, type RedisClient, type RedisTopology } from './redis-client.js'
import { serviceUnavailable, StatusError, UnavailableError } from '../lib/status.js'
import { performance } from 'node:perf_hooks'
import { evictingPolicy, EvictionPolicyError } from './redis-eviction.js'
import { FEED_HEARTBEAT_MS, FEED_PROOF_MS, FEED_STALL_MS } from './feed-liveness.js'
import { activeAt, decodeRecord, encodeRecord, RevocationIncomplete, type RevocationWatcher, type TokenRecord, type TokenStore } from './token-store.js'

/*
 * Key layout (prefix default `{ats}:`, a hash tag: see DEFAULT_KEY_PREFIX):
 *   <p>t:<tokenHash>   string  encodeRecord(...), PX = the token's remaining life
 *   <p>a:<accountId>   zset    the account's index: tokenHash scored by the Redis-clock ms its
 *                              key expires at (listpack-encoded while small). Bounded by the
 *                              per-account cap; expired entries pruned a few at a time
 *   <p>a:<accountId>:legacy    hash  an index written by a version before the zset (set aside
 *                              with a RENAME when the account next logs in; drained by revoke-all)
 *   <p>a:<accountId>:revoking  set   indexes a revoke-all has set aside and is draining
 *   <p>a:<accountId>:revoking:<n>   zset or hash, one such index (RENAMEd, TTL kept)
 *   <p>a:<accountId>:revocations    string  the counter that names them
 *   <p>e:<accountId>   string  the account's revocation epoch, set by terminateAccount; an issue or
 *                              refresh carrying an older one is refused (PX: the longest token lifetime)
 *   <p>deny            zset    tokenHash scored by the Redis-clock ms until which it is denied
 *   <p>revoked         channel space-separated hashes of tokens just ended (published by the scripts)
 * Every multi-step write is one Lua script, so each is atomic, and none walks more than a
 * few dozen entries however many tokens an account holds (issue 20 §3: one script ending
 * 150,000 tokens blocked Redis for 1.49 s). Index and deny-set times come from the Redis
 * server's own TIME, so no clock but Redis's ever decides an expiry.
 */

/** Index entries one script prunes, tokens one Login's cap ends, and tokens one revoke-all script ends. */
const PRUNE_BATCH = 16
const REVOKE_BATCH = 64

const SHARED = `
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- Keep a key alive as long as the longest token it lists.
local function extendKey(key, ttl)
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end
-- A hash index of an earlier version: set aside in O(1), for revocations to drain.
local function setAsideLegacy(index)
  if redis.call('TYPE', index).ok == 'hash' and redis.call('EXISTS', index .. ':legacy') == 0 then
    redis.call('RENAME', index, index .. ':legacy')
  end
end
-- True when a revocation has recorded an epoch above the one the caller read ('' : none given).
local function overtaken(key, epoch)
  if epoch == '' then return false end
  local current = redis.call('GET', key)
  return current ~= false and tonumber(current) > tonumber(epoch)
end
-- Ends tokens by hash: each key deleted, each one ended put in the deny set; returns those.
-- Expired deny entries go a bounded number at a time.
local function endTokens(tokenPrefix, hashes, denyKey, denyTtl, now)
  local ended = {}
  for _, hash in ipairs(hashes) do
    if redis.call('DEL', tokenPrefix .. hash) == 1 then
      ended[#ended + 1] = hash
      redis.call('ZADD', denyKey, now + denyTtl, hash)
    end
  end
  if #ended > 0 then
    local old = redis.call('ZRANGEBYSCORE', denyKey, '-inf', now, 'LIMIT', 0, 256)
    if #old > 0 then redis.call('ZREM', denyKey, unpack(old)) end
    redis.call('PEXPIRE', denyKey, denyTtl)
  end
  return ended
end
`

const SCRIPTS = {
  // KEYS: token, index, epoch, deny
  // ARGV: value, ttlMs, tokenHash, tokenKeyPrefix, epoch ('' : none), maxTokens, denyTtlMs, channel, pruneBatch
  atsIssue: {
    numberOfKeys: 4,
    lua: `${SHARED}
if overtaken(KEYS[3], ARGV[5]) then return 0 end
setAsideLegacy(KEYS[2])
local now = nowMs()
local ttl = tonumber(ARGV[2])
local batch = tonumber(ARGV[9])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
redis.call('ZADD', KEYS[2], now + ttl, ARGV[3])
-- A few entries of tokens that expired on their own, at every Login: never a walk of the index.
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, batch)
if #expired > 0 then redis.call('ZREM', KEYS[2], unpack(expired)) end
-- The cap: beyond it the account's oldest tokens (earliest expiry) end, a few at most per Login.
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[6])
if over > 0 then
  local popped = redis.call('ZPOPMIN', KEYS[2], math.min(over, batch))
  local hashes = {}
  for i = 1, #popped, 2 do hashes[#hashes + 1] = popped[i] end
  local ended = endTokens(ARGV[4], hashes, KEYS[4], tonumber(ARGV[7]), now)
  if #ended > 0 then redis.call('PUBLISH', ARGV[8], table.concat(ended, ' ')) end
end
extendKey(KEYS[2], ttl)
return 1`
  },
  // KEYS: token, index, epoch   ARGV: value, ttlMs, tokenHash, accountId, epoch ('' : none)
  atsRefresh: {
    numberOfKeys: 3,
    lua: `${SHARED}
if overtaken(KEYS[3], ARGV[5]) then return 0 end
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local _, _, account = string.find(current, '^[^|]*|[^|]*|([^|]*)|')
if account ~= ARGV[4] then return 0 end
setAsideLegacy(KEYS[2])
local ttl = tonumber(ARGV[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
redis.call('ZADD', KEYS[2], nowMs() + ttl, ARGV[3])
extendKey(KEYS[2], ttl)
return 1`
  },
  // KEYS: token, deny   ARGV: tokenHash, denyTtlMs, indexKeyPrefix, channel
  atsTerminate: {
    numberOfKeys: 2,
    lua: `${SHARED}
local current = redis.call('GET', KEYS[1])
if not current then return false end
local _, _, account = string.find(current, '^[^|]*|[^|]*|([^|]*)|')
if account then
  local index = ARGV[3] .. account
  local kind = redis.call('TYPE', index).ok
  if kind == 'zset' then redis.call('ZREM', index, ARGV[1]) elseif kind == 'hash' then redis.call('HDEL', index, ARGV[1]) end
  redis.call('HDEL', index .. ':legacy', ARGV[1])
end
-- The token key is <tokenPrefix><tokenHash>: its prefix is what endTokens prepends.
endTokens(string.sub(KEYS[1], 1, #KEYS[1] - #ARGV[1]), {ARGV[1]}, KEYS[2], tonumber(ARGV[2]), nowMs())
redis.call('PUBLISH', ARGV[4], ARGV[1])
return current`
  },
  // The first step of a revoke-all. KEYS: index, epoch, drains, counter   ARGV: epoch ('' : none), epochTtlMs
  // Records the epoch and sets the account's indexes aside (RENAME: O(1)) for atsRevokeBatch to
  // drain, all in one step: a Login that issued before it is in a set-aside index and will be
  // ended; one that read an older epoch and comes later is refused; one that read the new
  // epoch (it began after the revocation) goes into a fresh index and is left alone.
  atsRevokeBegin: {
    numberOfKeys: 4,
    lua: `${SHARED}
local ttl = tonumber(ARGV[2])
if ARGV[1] ~= '' then
  local current = redis.call('GET', KEYS[2])
  if not current or tonumber(current) < tonumber(ARGV[1]) then redis.call('SET', KEYS[2], ARGV[1], 'PX', ttl) end
end
for _, key in ipairs({KEYS[1], KEYS[1] .. ':legacy'}) do
  if redis.call('EXISTS', key) == 1 then
    local target = KEYS[3] .. ':' .. redis.call('INCR', KEYS[4])
    redis.call('RENAME', key, target)
    redis.call('SADD', KEYS[3], target)
  end
end
redis.call('PEXPIRE', KEYS[4], ttl)
if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('PEXPIRE', KEYS[3], ttl) end
return redis.call('SCARD', KEYS[3])`
  },
  // KEYS: drains, deny   ARGV: tokenKeyPrefix, denyTtlMs, channel, batch
  // Ends up to \`batch\` tokens of the set-aside indexes; returns {indexes left, hashes ended...}.
  atsRevokeBatch: {
    numberOfKeys: 2,
    lua: `${SHARED}
local now = nowMs()
local budget = tonumber(ARGV[4])
local ended = {}
for _, target in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if budget <= 0 then break end
  local kind = redis.call('TYPE', target).ok
  local hashes = {}
  if kind == 'zset' then
    hashes = redis.call('ZRANGE', target, 0, budget - 1)
    if #hashes > 0 then redis.call('ZREM', target, unpack(hashes)) end
  elseif kind == 'hash' then
    hashes = redis.call('HRANDFIELD', target, budget)
    if #hashes > 0 then redis.call('HDEL', target, unpack(hashes)) end
  end
  budget = budget - #hashes
  for _, hash in ipairs(endTokens(ARGV[1], hashes, KEYS[2], tonumber(ARGV[2]), now)) do ended[#ended + 1] = hash end
  if (kind ~= 'zset' and kind ~= 'hash') or redis.call('EXISTS', target) == 0 then redis.call('SREM', KEYS[1], target) end
end
if #ended > 0 then redis.call('PUBLISH', ARGV[3], table.concat(ended, ' ')) end
local result = {redis.call('SCARD', KEYS[1])}
for _, hash in ipairs(ended) do result[#result + 1] = hash end
return result`
  },
  // KEYS: deny   ARGV: tokenHash (empty: list all)
  atsDenied: {
    numberOfKeys: 1,
    lua: `${SHARED}
local now = nowMs()
if ARGV[1] ~= '' then
  local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
  if score and tonumber(score) > now then return {ARGV[1]} end
  return {}
end
return redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')`
  }
} as const

interface ScriptCommands {
  atsIssue (token: string, index: string, epochKey: string, deny: string, value: string, ttlMs: number, tokenHash: string, tokenPrefix: string,
    epoch: string, maxTokens: number, denyTtlMs: number, channel: string, pruneBatch: number): Promise<number>
  atsRefresh (token: string, index: string, epochKey: string, value: string, ttlMs: number, tokenHash: string, accountId: string, epoch: string): Promise<number>
  atsTerminate (token: string, deny: string, tokenHash: string, denyTtlMs: number, indexPrefix: string, channel: string): Promise<string | null>
  atsRevokeBegin (index: string, epochKey: string, drains: string, counter: string, epoch: string, epochTtlMs: number): Promise<number>
  atsRevokeBatch (drains: string, deny: string, tokenPrefix: string, denyTtlMs: number, channel: string, batch: number): Promise<[number, ...string[]]>
  atsDenied (deny: string, tokenHash: string): Promise<string[]>
}

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
   * (redis-eviction.ts). Default true; a guard, which only reads, may turn it off.
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

export interface RedisTokenStore extends TokenStore {
  readonly redis: RedisClient
  /** Resolves once the connection is ready (tests, start-up). */
  ready (): Promise<void>
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
    terminateAccount: async (accountId, epoch) => await guarded(async () => {
      const index = indexPrefix + accountId
      const drains = `${index}:revoking`
      await commands.atsRevokeBegin(index, epochPrefix + accountId, drains, `${index}:revocations`, epochArg(epoch), epochTtlMs)
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

/** Keys that share this prefix share a Cluster slot: it holds a non-empty hash tag. */
const HASH_TAG = /^[^{]*\{[^}]+\}/
const MAX_FIND_BATCH = 128

interface PendingFind {
  key: string
  resolve: (record: TokenRecord | null) => void
  reject: (error: StatusError) => void
}

/**
 * Authenticate's one read. Finds made in the same turn of the event loop (the requests of
 * many connections, handled one after another) go to Redis as one MGET: under load most of
 * a lone GET's cost is its own socket write and command bookkeeping, not Redis's work. A
 * lone find is a plain GET. Either way a find is one round trip, and it waits for the
 * batch at most until the end of the loop turn it was made in (setImmediate). An MGET's
 * keys must share a Cluster slot, so without a hash tag in the prefix a Cluster gets GETs.
 */
function createFinder (redis: RedisClient, tokenPrefix: string, onCommandError: ((error: unknown) => void) | undefined, expireOnRead: boolean): (tokenHash: string) => Promise<TokenRecord | null> {
  const decode = (value: string | null | undefined): TokenRecord | null => {
    if (value === null || value === undefined) return null
    return expireOnRead ? activeAt(decodeRecord(value), Date.now()) : decodeRecord(value)
  }
  const unavailable = (error: unknown): StatusError => error instanceof StatusError ? error : serviceUnavailable('redis', error)
  const get = (entry: PendingFind): void => {
    redis.get(entry.key).then((value) => { entry.resolve(decode(value)) }, (error: unknown) => {
      onCommandError?.(error)
      entry.reject(unavailable(error))
    })
  }
  if (redis.isCluster && !HASH_TAG.test(tokenPrefix)) {
    return async (tokenHash) => await new Promise((resolve, reject) => { get({ key: tokenPrefix + tokenHash, resolve, reject }) })
  }

  let pending: PendingFind[] = []
  const flush = (): void => {
    const batch = pending
    pending = []
    if (batch.length <= 1) {
      if (batch[0] !== undefined) get(batch[0])
      return
    }
    redis.mget(batch.map((entry) => entry.key)).then((values) => {
      batch.forEach((entry, index) => { entry.resolve(decode(values[index])) })
    }, (error: unknown) => {
      const failure = unavailable(error)
      // Counted per find, as when each was a GET of its own: every one of them failed a request.
      for (const entry of batch) {
        onCommandError?.(error)
        entry.reject(failure)
      }
    })
  }
  // Not an async function: the promise made here is the one the caller awaits (one fewer per find).
  return (tokenHash) => new Promise((resolve, reject) => {
    if (pending.length === 0) setImmediate(flush)
    pending.push({ key: tokenPrefix + tokenHash, resolve, reject })
    if (pending.length === MAX_FIND_BATCH) flush()
  })
}

interface RevocationFeed {
  watch (watcher: RevocationWatcher): () => void
  close (): Promise<void>
}

/**
 * The `revoked` channel on a connection of its own (a subscribed connection can
 * do nothing else), opened with the first watcher. Each (re)connection subscribes
 * again and only then reports `live`; a lost connection reports `interrupted`, since
 * pub/sub does not replay what was published meanwhile.
 */
function createRevocationFeed (redis: RedisClient, channel: string): RevocationFeed {
  const watchers = new Set<RevocationWatcher>()
  let subscriber: RedisClient | undefined
  let live = false

  const setLive = (next: boolean): void => {
    if (live === next) return
    live = next
    for (const watcher of watchers) {
      if (next) watcher.live(FEED_PROOF_MS)
      else watcher.interrupted()
    }
  }

  const open = (): RedisClient => {
    const connection = duplicateForSubscribing(redis, `${channel}-watcher`)
    connection.on('error', () => {})
    connection.on('ready', () => {
      connection.subscribe(channel).then(() => { setLive(true) }, () => { connection.disconnect(true) })
    })
    connection.on('close', () => { setLive(false) })
    connection.on('message', (from: string, message: string) => {
      if (from !== channel || message === '') return
      const hashes = message.split(' ')
      for (const watcher of watchers) watcher.revoked(hashes)
    })
    return connection
  }

  // The proof of liveness (stores/feed-liveness.ts): a PING on the subscribed connection every
  // FEED_HEARTBEAT_MS; its PONG renews every watcher's trust for FEED_PROOF_MS from the PING's
  // sending. A PING unanswered for FEED_STALL_MS (a half-open connection: a NAT drop, a frozen
  // proxy) cuts the connection, so it is made again; the watchers' trust has lapsed long before.
  let pingSentAt: number | undefined
  const heartbeat = setInterval(() => {
    const connection = subscriber
    if (connection === undefined || !live) return
    if (pingSentAt !== undefined) {
      if (performance.now() - pingSentAt > FEED_STALL_MS) {
        pingSentAt = undefined
        connection.disconnect(true)
      }
      return
    }
    const sentAt = performance.now()
    pingSentAt = sentAt
    connection.ping().then(() => {
      if (pingSentAt !== sentAt) return
      pingSentAt = undefined
      if (subscriber !== connection || !live) return
      const validForMs = FEED_PROOF_MS - (performance.now() - sentAt)
      if (validForMs > 0) for (const watcher of watchers) watcher.live(validForMs)
    }, () => {
      if (pingSentAt === sentAt) pingSentAt = undefined
      if (subscriber === connection) connection.disconnect(true)
    })
  }, FEED_HEARTBEAT_MS)
  heartbeat.unref()

  return {
    watch (watcher) {
      watchers.add(watcher)
      subscriber ??= open()
      // Live, not yet proven for this watcher: the next heartbeat proves it.
      if (live) watcher.live(0)
      return () => { watchers.delete(watcher) }
    },
    async close () {
      clearInterval(heartbeat)
      watchers.clear()
      const connection = subscriber
      subscriber = undefined
      live = false
      if (connection !== undefined) await connection.quit().catch(() => { connection.disconnect() })
    }
  }
}
