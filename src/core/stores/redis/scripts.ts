import type { RedisClient } from '@auth-token-service/protocol/redis-connection'
import { GROUPS_SHARED } from './regroup-lua.js'

/*
 * The token store's Lua scripts: every multi-step write is one script, so each is atomic.
 *
 * Every key a token's account touches is in its bucket (layout.ts of packages/protocol), one Cluster slot.
 * Each script declares every key it touches in KEYS (none is built inside Lua), as Redis
 * Cluster, proxies and Redis 7's script checks require, and each revocation script returns the
 * number of replicas connected to its master, so that the store can WAIT for one of them
 * (replicated.ts). The layout of before 0.2.0 (every key under the prefix itself, one slot) and
 * its scripts are gone (upgrades from before 0.2.0 go through 0.2.x first).
 *
 * Bucket layout (prefix `{atsAb}`, no separators: layout.ts of packages/protocol; members are token digests, hashes
 * are bucket + digest):
 *   <b>t<digest>         string  encodeRecord(...), PX = the token's remaining life
 *   <b>a<accountId>      zset    the account's index, in order of issue: digest scored by its key's
 *                                expiry (Redis ms), raised past the newest entry's (issueScore).
 *                                Bounded by the per-account cap; expired entries pruned a few at a time
 *   <b>r<accountId>      zset    an index a revoke-all has set aside and is draining
 *   <b>e<accountId>      string  the account's revocation epoch, set by terminateAccount; an issue or
 *                                refresh carrying an older one is refused (PX: the longest token lifetime)
 *   <b>L<digest>         zset    the tokens given out under a token (its OpenID Connect access tokens),
 *                                scored by expiry: ending the token ends them (revoke.ts)
 *   <b>g<accountId>      string  the account's last groups change, `<version>;<groups>` (regroup.ts)
 *   <b>deny              zset    digest scored by the Redis-clock ms until which it is denied
 *   <b>lf:...                    the login limiter's counters (login-limiter.ts)
 * The revocation channel is `<p>revoked` (classic PUBLISH: a Cluster delivers it to the
 * subscribers of every node), its messages space-separated hashes of tokens just ended.
 *
 * None walks more than a few dozen entries however many tokens an account holds (measured:
 * one script ending 150,000 tokens blocked Redis for 1.49 s). Index and deny-set times come
 * from the Redis server's own TIME, so no clock but Redis's ever decides an expiry.
 */

/** Index entries one script prunes, tokens one Login's cap ends, and tokens one revoke-all script ends. */
export const PRUNE_BATCH = 16
export const REVOKE_BATCH = 64

export const SHARED = `
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- Keep a key alive as long as the longest token it lists.
local function extendKey(key, ttl)
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end
-- An index entry's score: the key's expiry (Redis ms), or just past the account's newest entry
-- when that is as late. So the index stays in order of issue (a refresh counts as one) with no
-- two scores equal: expiries are whole seconds (core/time.ts), and tokens of one second would
-- tie, leaving the cap to end any of them, the one just issued too. A score is never below its
-- key's expiry, so pruning by score never drops an entry whose token still lives.
local function issueScore(index, expiry)
  local newest = redis.call('ZRANGE', index, -1, -1, 'WITHSCORES')
  if #newest == 2 and tonumber(newest[2]) >= expiry then return tonumber(newest[2]) + 1 end
  return expiry
end
-- True when a revocation has recorded an epoch above the one the caller read ('' : none given).
local function overtaken(key, epoch)
  if epoch == '' then return false end
  local current = redis.call('GET', key)
  return current ~= false and tonumber(current) > tonumber(epoch)
end
-- Replicas connected to this master: the store WAITs for one after a revocation when there are any.
local function replicas()
  return tonumber(string.match(redis.call('INFO', 'replication'), 'connected_slaves:(%d+)')) or 0
end
-- Denies the ended members; expired deny entries go a bounded number at a time.
local function deny(denyKey, ended, denyTtl, now)
  if #ended == 0 then return end
  for _, member in ipairs(ended) do redis.call('ZADD', denyKey, now + denyTtl, member) end
  local old = redis.call('ZRANGEBYSCORE', denyKey, '-inf', now, 'LIMIT', 0, 256)
  if #old > 0 then redis.call('ZREM', denyKey, unpack(old)) end
  redis.call('PEXPIRE', denyKey, denyTtl)
end
`

export const SCRIPTS = {
  // KEYS: token, index, epoch, groups change (regroup.ts)
  // ARGV: value, ttlMs, member, epoch ('' : none), maxTokens, batch, groups version ('' : none)
  // -> {0} overtaken; {1, members over the cap...}: the caller ends those with atsEnd.
  atsIssue: {
    numberOfKeys: 4,
    lua: `${SHARED}${GROUPS_SHARED}
if overtaken(KEYS[3], ARGV[4]) then return {0} end
local now = nowMs()
local ttl = tonumber(ARGV[2])
local batch = tonumber(ARGV[6])
redis.call('SET', KEYS[1], currentGroups(KEYS[4], ARGV[7], ARGV[1]), 'PX', ttl)
redis.call('ZADD', KEYS[2], issueScore(KEYS[2], now + ttl), ARGV[3])
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, batch)
if #expired > 0 then redis.call('ZREM', KEYS[2], unpack(expired)) end
extendKey(KEYS[2], ttl)
local result = {1}
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[5])
if over > 0 then
  for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, math.min(over, batch) - 1)) do result[#result + 1] = member end
end
return result`
  },
  // KEYS: token, index, epoch, groups change   ARGV: value, ttlMs, member, accountId, epoch ('' : none), groups version ('' : none)
  atsRefresh: {
    numberOfKeys: 4,
    lua: `${SHARED}${GROUPS_SHARED}
if overtaken(KEYS[3], ARGV[5]) then return 0 end
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local _, _, account = string.find(current, '^[^|]*|[^|]*|([^|]*)|')
if account ~= ARGV[4] then return 0 end
local ttl = tonumber(ARGV[2])
redis.call('SET', KEYS[1], currentGroups(KEYS[4], ARGV[6], ARGV[1]), 'PX', ttl)
redis.call('ZADD', KEYS[2], issueScore(KEYS[2], nowMs() + ttl), ARGV[3])
extendKey(KEYS[2], ttl)
return 1`
  },
  // KEYS: token, index, epoch, groups change, parent token, parent's link
  // ARGV: value, ttlMs, member, epoch ('' : none), groups version ('' : none)
  // A token given out under another (an OpenID Connect access token under the sign-in token it came
  // from): written only while the parent is active and no revocation overtook the epoch read, in the
  // account's index (a revoke-all ends it) and in the parent's link set (ending the parent ends it).
  // -> 1 written, 0 refused
  atsIssueUnder: {
    numberOfKeys: 6,
    lua: `${SHARED}${GROUPS_SHARED}
if overtaken(KEYS[3], ARGV[4]) then return 0 end
if redis.call('EXISTS', KEYS[5]) == 0 then return 0 end
local now = nowMs()
local ttl = tonumber(ARGV[2])
redis.call('SET', KEYS[1], currentGroups(KEYS[4], ARGV[5], ARGV[1]), 'PX', ttl)
redis.call('ZADD', KEYS[2], issueScore(KEYS[2], now + ttl), ARGV[3])
extendKey(KEYS[2], ttl)
redis.call('ZADD', KEYS[6], now + ttl, ARGV[3])
extendKey(KEYS[6], ttl)
return 1`
  },
  // KEYS: token, index (of the account the caller read in the record), deny
  // ARGV: member, accountId, denyTtlMs, channel, hash  -> {record or '', replicas}
  atsTerminate: {
    numberOfKeys: 3,
    lua: `${SHARED}
local current = redis.call('GET', KEYS[1])
if not current then return {'', 0} end
local _, _, account = string.find(current, '^[^|]*|[^|]*|([^|]*)|')
if account ~= ARGV[2] then return {'', 0} end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[1])
deny(KEYS[3], {ARGV[1]}, tonumber(ARGV[3]), nowMs())
redis.call('PUBLISH', ARGV[4], ARGV[5])
return {current, replicas()}`
  },
  // KEYS: index, epoch, drain   ARGV: epoch ('' : none), epochTtlMs, batch, except ('' : none)
  // The first step of a revoke-all: records the epoch and sets the index aside (RENAME, or a
  // merge into a drain an earlier revoke-all left) in one step, for atsEnd to drain. A Login
  // that issued before it is in the drain and will be ended; one that read an older epoch and
  // comes later is refused; one that read the new epoch (it began after the revocation) goes
  // into a fresh index and is left alone. `except` (a member: the token a password change
  // keeps: the caller's own) goes back into the fresh index in the same step, so no batch ends it.
  // -> {first members to end, replicas}
  atsRevokeBegin: {
    numberOfKeys: 3,
    lua: `${SHARED}
if ARGV[1] ~= '' then
  local current = redis.call('GET', KEYS[2])
  if not current or tonumber(current) < tonumber(ARGV[1]) then redis.call('SET', KEYS[2], ARGV[1], 'PX', tonumber(ARGV[2])) end
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('EXISTS', KEYS[3]) == 1 then
    local keep = math.max(redis.call('PTTL', KEYS[1]), redis.call('PTTL', KEYS[3]))
    redis.call('ZUNIONSTORE', KEYS[3], 2, KEYS[3], KEYS[1], 'AGGREGATE', 'MAX')
    redis.call('DEL', KEYS[1])
    if keep > 0 then redis.call('PEXPIRE', KEYS[3], keep) end
  else
    redis.call('RENAME', KEYS[1], KEYS[3])
  end
end
if ARGV[4] ~= '' then
  local kept = redis.call('ZSCORE', KEYS[3], ARGV[4])
  if kept then
    redis.call('ZREM', KEYS[3], ARGV[4])
    redis.call('ZADD', KEYS[1], kept, ARGV[4])
    redis.call('PEXPIRE', KEYS[1], math.max(1, tonumber(kept) - nowMs()))
  end
end
return {redis.call('ZRANGE', KEYS[3], 0, tonumber(ARGV[3]) - 1), replicas()}`
  },
  // KEYS: from (an index or a drain), deny, the members' token keys...
  // ARGV: denyTtlMs, channel, bucket, next (members to return for the next call; 0: none), members...
  // Removes the members from `from`, ends those still active (deleted, denied, published).
  // -> {ended members, next members, replicas}
  atsEnd: {
    lua: `${SHARED}
local now = nowMs()
local ended = {}
for i = 5, #ARGV do
  redis.call('ZREM', KEYS[1], ARGV[i])
  if redis.call('DEL', KEYS[i - 2]) == 1 then ended[#ended + 1] = ARGV[i] end
end
deny(KEYS[2], ended, tonumber(ARGV[1]), now)
if #ended > 0 then
  local hashes = {}
  for i, member in ipairs(ended) do hashes[i] = ARGV[3] .. member end
  redis.call('PUBLISH', ARGV[2], table.concat(hashes, ' '))
end
local following = {}
if tonumber(ARGV[4]) > 0 then following = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[4]) - 1) end
return {ended, following, replicas()}`
  },
  // KEYS: deny   ARGV: member  -> 1 while it is denied (by Redis's clock: an entry may outlive its time), else 0
  atsDenied: {
    numberOfKeys: 1,
    lua: `${SHARED}
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) > nowMs() then return 1 end
return 0`
  }
} as const

export interface ScriptCommands {
  atsIssue (token: string, index: string, epochKey: string, groupsKey: string, value: string, ttlMs: number, member: string, epoch: string, maxTokens: number, batch: number, groupsVersion: string): Promise<[number, ...string[]]>
  atsRefresh (token: string, index: string, epochKey: string, groupsKey: string, value: string, ttlMs: number, member: string, accountId: string, epoch: string, groupsVersion: string): Promise<number>
  atsIssueUnder (token: string, index: string, epochKey: string, groupsKey: string, parent: string, link: string, value: string, ttlMs: number, member: string, epoch: string, groupsVersion: string): Promise<number>
  atsTerminate (token: string, index: string, deny: string, member: string, accountId: string, denyTtlMs: number, channel: string, hash: string): Promise<[string, number]>
  atsRevokeBegin (index: string, epochKey: string, drain: string, epoch: string, epochTtlMs: number, batch: number, except: string): Promise<[string[], number]>
  /** numberOfKeys 0 in the definition: the key count is the first argument (2 + members). */
  atsEnd (numberOfKeys: number, ...keysAndArgs: Array<string | number>): Promise<[string[], string[], number]>
  atsDenied (deny: string, member: string): Promise<number>
}

/** Defines the scripts on the client (once per client: ioredis runs them by EVALSHA). */
export function defineScripts (redis: RedisClient): ScriptCommands {
  for (const [name, script] of Object.entries(SCRIPTS)) redis.defineCommand(name, script)
  return redis as unknown as ScriptCommands
}

/** A script's epoch argument: '' when the caller gives none (not checked). */
export const epochArg = (epoch: number | undefined): string => epoch === undefined ? '' : String(epoch)

/** A PX argument: whole milliseconds, at least 1. */
export const pxArg = (ttlMs: number): number => Math.max(1, Math.floor(ttlMs))
