/* The token store's Lua scripts: every multi-step write is one script, so each is atomic. */

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
