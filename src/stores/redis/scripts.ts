/* The token store's Lua scripts: every multi-step write is one script, so each is atomic. */

/*
 * Two places (issue 23, keys.ts): a bucket's keys (`{atsAb}`, every key a v2 token's account
 * touches shares that slot) and the legacy place (the configured prefix itself, where tokens
 * issued before issue 23 live until they expire). The `ats2*` scripts serve buckets: each
 * declares every key it touches in KEYS (none is built inside Lua), as Redis Cluster, proxies
 * and Redis 7's script checks require, and each revocation script returns the number of
 * replicas connected to its master, so that the store can WAIT for one of them.
 *
 * Bucket layout (prefix `{atsAb}`, no separators: keys.ts; members are token digests, hashes
 * are bucket + digest):
 *   <b>t<digest>         string  encodeRecord(...), PX = the token's remaining life
 *   <b>a<accountId>      zset    the account's index, in order of issue: digest scored by its key's
 *                                expiry (Redis ms), raised past the newest entry's (issueScore)
 *   <b>r<accountId>      zset    an index a revoke-all has set aside and is draining
 *   <b>e<accountId>      string  the account's revocation epoch (as <p>e: below)
 *   <b>deny              zset    digest scored by the Redis-clock ms until which it is denied
 *   <b>lf:...                    the login limiter's counters (login-limiter.ts)
 * The revocation channel stays `<p>revoked` (classic PUBLISH: a Cluster delivers it to the
 * subscribers of every node), its messages space-separated hashes as ever.
 *
 * The legacy place (`atsIssue` ... `atsDenied`):

/*
 *   <p>t:<tokenHash>   string  encodeRecord(...), PX = the token's remaining life
 *   <p>a:<accountId>   zset    the account's index: tokenHash scored by the Redis-clock ms its
 *                              key expires at, raised past the newest entry's to keep the order of
 *                              issue (issueScore; listpack-encoded while small). Bounded by the
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
export const PRUNE_BATCH = 16
export const REVOKE_BATCH = 64

const SHARED = `
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
-- two scores equal: expiries are whole seconds (tokens/time.ts), and tokens of one second would
-- tie, leaving the cap to end any of them, the one just issued too. A score is never below its
-- key's expiry, so pruning by score never drops an entry whose token still lives.
local function issueScore(index, expiry)
  local newest = redis.call('ZRANGE', index, -1, -1, 'WITHSCORES')
  if #newest == 2 and tonumber(newest[2]) >= expiry then return tonumber(newest[2]) + 1 end
  return expiry
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

export const SCRIPTS = {
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
redis.call('ZADD', KEYS[2], issueScore(KEYS[2], now + ttl), ARGV[3])
-- A few entries of tokens that expired on their own, at every Login: never a walk of the index.
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, batch)
if #expired > 0 then redis.call('ZREM', KEYS[2], unpack(expired)) end
-- The cap: beyond it the account's oldest-issued tokens (lowest scores) end, a few at most per Login.
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
redis.call('ZADD', KEYS[2], issueScore(KEYS[2], nowMs() + ttl), ARGV[3])
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
  // The first step of a revoke-all. KEYS: index, epoch, drains, counter
  // ARGV: epoch ('' : none), epochTtlMs, except ('' : none)
  // Records the epoch and sets the account's indexes aside (RENAME: O(1)) for atsRevokeBatch to
  // drain, all in one step: a Login that issued before it is in a set-aside index and will be
  // ended; one that read an older epoch and comes later is refused; one that read the new
  // epoch (it began after the revocation) goes into a fresh index and is left alone.
  // \`except\`: one token hash taken back into the fresh index in the same step (a password
  // change ends every session but the one that made it: issue 21), so no batch ends it.
  atsRevokeBegin: {
    numberOfKeys: 4,
    lua: `${SHARED}
local ttl = tonumber(ARGV[2])
if ARGV[1] ~= '' then
  local current = redis.call('GET', KEYS[2])
  if not current or tonumber(current) < tonumber(ARGV[1]) then redis.call('SET', KEYS[2], ARGV[1], 'PX', ttl) end
end
local kept = false
for _, key in ipairs({KEYS[1], KEYS[1] .. ':legacy'}) do
  if redis.call('EXISTS', key) == 1 then
    local target = KEYS[3] .. ':' .. redis.call('INCR', KEYS[4])
    redis.call('RENAME', key, target)
    redis.call('SADD', KEYS[3], target)
    if ARGV[3] ~= '' and not kept then
      if redis.call('TYPE', target).ok == 'zset' then
        kept = redis.call('ZSCORE', target, ARGV[3])
        if kept then redis.call('ZREM', target, ARGV[3]) end
      elseif redis.call('HDEL', target, ARGV[3]) == 1 then
        -- An earlier version's index holds no expiry: the longest a token can live.
        kept = nowMs() + ttl
      end
    end
  end
end
if kept then
  redis.call('ZADD', KEYS[1], kept, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.max(1, tonumber(kept) - nowMs()))
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

export interface ScriptCommands {
  atsIssue (token: string, index: string, epochKey: string, deny: string, value: string, ttlMs: number, tokenHash: string, tokenPrefix: string,
    epoch: string, maxTokens: number, denyTtlMs: number, channel: string, pruneBatch: number): Promise<number>
  atsRefresh (token: string, index: string, epochKey: string, value: string, ttlMs: number, tokenHash: string, accountId: string, epoch: string): Promise<number>
  atsTerminate (token: string, deny: string, tokenHash: string, denyTtlMs: number, indexPrefix: string, channel: string): Promise<string | null>
  atsRevokeBegin (index: string, epochKey: string, drains: string, counter: string, epoch: string, epochTtlMs: number, except: string): Promise<number>
  atsRevokeBatch (drains: string, deny: string, tokenPrefix: string, denyTtlMs: number, channel: string, batch: number): Promise<[number, ...string[]]>
  atsDenied (deny: string, tokenHash: string): Promise<string[]>
}

const SHARED_V2 = `
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function extendKey(key, ttl)
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end
-- An index entry's score: the key's expiry (Redis ms), or just past the account's newest entry
-- when that is as late. So the index stays in order of issue (a refresh counts as one) with no
-- two scores equal: expiries are whole seconds (tokens/time.ts), and tokens of one second would
-- tie, leaving the cap to end any of them, the one just issued too. A score is never below its
-- key's expiry, so pruning by score never drops an entry whose token still lives.
local function issueScore(index, expiry)
  local newest = redis.call('ZRANGE', index, -1, -1, 'WITHSCORES')
  if #newest == 2 and tonumber(newest[2]) >= expiry then return tonumber(newest[2]) + 1 end
  return expiry
end
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

/** The bucket scripts (issue 23): every key in KEYS. */
export const SCRIPTS_V2 = {
  // KEYS: token, index, epoch   ARGV: value, ttlMs, member, epoch ('' : none), maxTokens, batch
  // -> {0} overtaken; {1, members over the cap...}: the caller ends those with ats2End.
  ats2Issue: {
    numberOfKeys: 3,
    lua: `${SHARED_V2}
if overtaken(KEYS[3], ARGV[4]) then return {0} end
local now = nowMs()
local ttl = tonumber(ARGV[2])
local batch = tonumber(ARGV[6])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
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
  // KEYS: token, index, epoch   ARGV: value, ttlMs, member, accountId, epoch ('' : none)
  ats2Refresh: {
    numberOfKeys: 3,
    lua: `${SHARED_V2}
if overtaken(KEYS[3], ARGV[5]) then return 0 end
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local _, _, account = string.find(current, '^[^|]*|[^|]*|([^|]*)|')
if account ~= ARGV[4] then return 0 end
local ttl = tonumber(ARGV[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
redis.call('ZADD', KEYS[2], issueScore(KEYS[2], nowMs() + ttl), ARGV[3])
extendKey(KEYS[2], ttl)
return 1`
  },
  // KEYS: token, index (of the account the caller read in the record), deny
  // ARGV: member, accountId, denyTtlMs, channel, hash  -> {record or '', replicas}
  ats2Terminate: {
    numberOfKeys: 3,
    lua: `${SHARED_V2}
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
  // Records the epoch and sets the index aside (RENAME, or a merge into a drain an earlier
  // revoke-all left) in one step, as atsRevokeBegin does; `except` (a member: the token a
  // password change keeps, issue 21) goes back into the fresh index in the same step.
  // -> {first members to end, replicas}
  ats2RevokeBegin: {
    numberOfKeys: 3,
    lua: `${SHARED_V2}
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
  ats2End: {
    lua: `${SHARED_V2}
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
  }
} as const

export interface ScriptCommandsV2 {
  ats2Issue (token: string, index: string, epochKey: string, value: string, ttlMs: number, member: string, epoch: string, maxTokens: number, batch: number): Promise<[number, ...string[]]>
  ats2Refresh (token: string, index: string, epochKey: string, value: string, ttlMs: number, member: string, accountId: string, epoch: string): Promise<number>
  ats2Terminate (token: string, index: string, deny: string, member: string, accountId: string, denyTtlMs: number, channel: string, hash: string): Promise<[string, number]>
  ats2RevokeBegin (index: string, epochKey: string, drain: string, epoch: string, epochTtlMs: number, batch: number, except: string): Promise<[string[], number]>
  /** numberOfKeys 0 in the definition: the key count is the first argument (2 + members). */
  ats2End (numberOfKeys: number, ...keysAndArgs: Array<string | number>): Promise<[string[], string[], number]>
}
