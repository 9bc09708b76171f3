import { createRedisClient, DEFAULT_KEY_PREFIX, duplicateForSubscribing, type RedisClient, type RedisTopology } from './client.js'
import { serviceUnavailable, StatusError } from '../../http/status.js'
import { decodeRecord, encodeRecord, type TokenRecord } from '../../tokens/record.js'
import type { RevocationWatcher, TokenStore } from '../token-store.js'

/*
 * Key layout (prefix default `{ats}:`, a hash tag: see DEFAULT_KEY_PREFIX):
 *   <p>t:<tokenHash>   string  encodeRecord(...), PX = the token's remaining life
 *   <p>a:<accountId>   hash    tokenHash -> ''  the account's index (listpack-encoded when
 *                              small, which is what keeps a token under 300 bytes on Redis 7.0)
 *   <p>deny            zset    tokenHash scored by the Redis-clock ms until which it is denied
 *   <p>revoked         channel space-separated hashes of tokens just ended (published by the scripts)
 * Every multi-step write is one Lua script, so each is atomic. Deny-set times come from
 * the Redis server's own TIME, so no clock but Redis's ever decides an expiry.
 */

// Shared by scripts: keep an account index alive as long as its longest token.
const EXTEND_INDEX = `
local function extendIndex(key, ttl)
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function deny(key, hash, ttl)
  local now = nowMs()
  redis.call('ZADD', key, now + ttl, hash)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  redis.call('PEXPIRE', key, ttl)
end
`

const SCRIPTS = {
  // KEYS: token, index   ARGV: value, ttlMs, tokenHash, tokenKeyPrefix
  atsIssue: {
    numberOfKeys: 2,
    lua: `${EXTEND_INDEX}
local ttl = tonumber(ARGV[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
redis.call('HSET', KEYS[2], ARGV[3], '')
local size = redis.call('HLEN', KEYS[2])
-- Amortized pruning of ended tokens from the index: every 32nd entry.
if size % 32 == 0 then
  for _, hash in ipairs(redis.call('HKEYS', KEYS[2])) do
    if redis.call('EXISTS', ARGV[4] .. hash) == 0 then redis.call('HDEL', KEYS[2], hash) end
  end
end
extendIndex(KEYS[2], ttl)
return 1`
  },
  // KEYS: token, index   ARGV: value, ttlMs, tokenHash, accountId
  atsRefresh: {
    numberOfKeys: 2,
    lua: `${EXTEND_INDEX}
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local _, _, account = string.find(current, '^[^|]*|[^|]*|([^|]*)|')
if account ~= ARGV[4] then return 0 end
local ttl = tonumber(ARGV[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
redis.call('HSET', KEYS[2], ARGV[3], '')
extendIndex(KEYS[2], ttl)
return 1`
  },
  // KEYS: token, deny   ARGV: tokenHash, denyTtlMs, indexKeyPrefix, channel
  atsTerminate: {
    numberOfKeys: 2,
    lua: `${EXTEND_INDEX}
local current = redis.call('GET', KEYS[1])
if not current then return false end
redis.call('DEL', KEYS[1])
local _, _, account = string.find(current, '^[^|]*|[^|]*|([^|]*)|')
if account then redis.call('HDEL', ARGV[3] .. account, ARGV[1]) end
deny(KEYS[2], ARGV[1], tonumber(ARGV[2]))
redis.call('PUBLISH', ARGV[4], ARGV[1])
return current`
  },
  // KEYS: index, deny   ARGV: tokenKeyPrefix, denyTtlMs, channel
  atsTerminateAccount: {
    numberOfKeys: 2,
    lua: `${EXTEND_INDEX}
local ended = {}
for _, hash in ipairs(redis.call('HKEYS', KEYS[1])) do
  if redis.call('DEL', ARGV[1] .. hash) == 1 then
    ended[#ended + 1] = hash
    deny(KEYS[2], hash, tonumber(ARGV[2]))
  end
end
redis.call('DEL', KEYS[1])
if #ended > 0 then redis.call('PUBLISH', ARGV[3], table.concat(ended, ' ')) end
return ended`
  },
  // KEYS: deny   ARGV: tokenHash (empty: list all)
  atsDenied: {
    numberOfKeys: 1,
    lua: `${EXTEND_INDEX}
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
  atsIssue (token: string, index: string, value: string, ttlMs: number, tokenHash: string, tokenPrefix: string): Promise<number>
  atsRefresh (token: string, index: string, value: string, ttlMs: number, tokenHash: string, accountId: string): Promise<number>
  atsTerminate (token: string, deny: string, tokenHash: string, denyTtlMs: number, indexPrefix: string, channel: string): Promise<string | null>
  atsTerminateAccount (index: string, deny: string, tokenPrefix: string, denyTtlMs: number, channel: string): Promise<string[]>
  atsDenied (deny: string, tokenHash: string): Promise<string[]>
}

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

const HEARTBEAT_INTERVAL_MS = 5000
const HEARTBEAT_TIMEOUT_MS = 2000

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
function createFinder (redis: RedisClient, tokenPrefix: string, onCommandError?: (error: unknown) => void): (tokenHash: string) => Promise<TokenRecord | null> {
  const decode = (value: string | null | undefined): TokenRecord | null => value === null || value === undefined ? null : decodeRecord(value)
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
      if (next) watcher.live()
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

  // A half-open connection (a NAT drop, a failover without a reset) looks live forever: ping it,
  // and a ping unanswered in time cuts it, so watchers hear `interrupted` and drop their caches.
  const heartbeat = setInterval(() => {
    const connection = subscriber
    if (connection === undefined || !live) return
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error('ping timeout')) }, HEARTBEAT_TIMEOUT_MS) })
    Promise.race([connection.ping(), timeout])
      .catch(() => { if (subscriber === connection) connection.disconnect(true) })
      .finally(() => { clearTimeout(timer) })
  }, HEARTBEAT_INTERVAL_MS)
  heartbeat.unref()

  return {
    watch (watcher) {
      watchers.add(watcher)
      subscriber ??= open()
      if (live) watcher.live()
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
