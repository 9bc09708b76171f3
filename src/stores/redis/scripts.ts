/* The token store's Lua scripts: every multi-step write is one script, so each is atomic. */

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

export const SCRIPTS = {
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

export interface ScriptCommands {
  atsIssue (token: string, index: string, value: string, ttlMs: number, tokenHash: string, tokenPrefix: string): Promise<number>
  atsRefresh (token: string, index: string, value: string, ttlMs: number, tokenHash: string, accountId: string): Promise<number>
  atsTerminate (token: string, deny: string, tokenHash: string, denyTtlMs: number, indexPrefix: string, channel: string): Promise<string | null>
  atsTerminateAccount (index: string, deny: string, tokenPrefix: string, denyTtlMs: number, channel: string): Promise<string[]>
  atsDenied (deny: string, tokenHash: string): Promise<string[]>
}
