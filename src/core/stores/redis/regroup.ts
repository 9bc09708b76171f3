import { groupsField } from '@auth-token-service/protocol/layout'
import type { KeyLayout } from '@auth-token-service/protocol/layout'
import type { RedisClient } from '@auth-token-service/protocol/redis-connection'
import { accountBucket } from '@auth-token-service/protocol/token'
import type { Replicated } from './replicated.js'
import { SHARED } from './scripts.js'
import { GROUPS_SHARED } from './regroup-lua.js'

/*
 * An account's groups changed: its live records carry the new set from now on (issue 44, a
 * membership change takes effect at once). In the account's bucket (one Cluster slot):
 *   <b>g<accountId>   string  `<version>;<groups>`, the last change pushed (PX: the longest token
 *                             lifetime). A Login that read an older version before the change
 *                             writes its token with these groups instead (GROUPS_SHARED, used by
 *                             atsIssue, atsRefresh, atsSeedKey), so no token is written with a set a
 *                             change already replaced.
 * Two scripts, each bounded as every other is (a few dozen records at a time):
 *   atsRegroupBegin   records the change's version and groups unless a later change did
 *   atsRegroupRecords rewrites a batch of the account's records (its Login tokens from its index,
 *                     its API keys by hash) in place, their expiry kept, and PUBLISHes their hashes
 *                     on the revocation channel: caches drop what they held and read again.
 * Then one replication wait, as for a revocation: a group taken away is not acknowledged on a
 * master whose failover could give it back.
 */

/** Records one atsRegroupRecords rewrites. */
export const REGROUP_BATCH = 64

const SCRIPTS = {
  // KEYS: gkey   ARGV: version, groups, ttlMs  -> 1 recorded, 0 a later change was there
  atsRegroupBegin: {
    numberOfKeys: 1,
    lua: `
local change = redis.call('GET', KEYS[1])
if change then
  local sep = string.find(change, ';', 1, true)
  if tonumber(string.sub(change, 1, sep - 1)) > tonumber(ARGV[1]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1] .. ';' .. ARGV[2], 'PX', tonumber(ARGV[3]))
return 1`
  },
  // KEYS: gkey, record keys...   ARGV: version, groups, channel, hash of each record key...
  // -> {rewritten, replicas}; {-1, 0} when a later change took over (it rewrites them itself)
  atsRegroupRecords: {
    lua: `${SHARED}${GROUPS_SHARED}
local change = redis.call('GET', KEYS[1])
if change then
  local sep = string.find(change, ';', 1, true)
  if tonumber(string.sub(change, 1, sep - 1)) > tonumber(ARGV[1]) then return {-1, 0} end
end
local hashes = {}
for i = 2, #KEYS do
  local value = redis.call('GET', KEYS[i])
  if value then
    local changed = regrouped(value, ARGV[2])
    if changed ~= value then
      redis.call('SET', KEYS[i], changed, 'KEEPTTL')
      hashes[#hashes + 1] = ARGV[i + 2]
    end
  end
end
if #hashes > 0 then redis.call('PUBLISH', ARGV[3], table.concat(hashes, ' ')) end
return {#hashes, replicas()}`
  }
} as const

interface RegroupScripts {
  atsRegroupBegin (gkey: string, version: number, groups: string, ttlMs: number): Promise<number>
  atsRegroupRecords (numberOfKeys: number, gkey: string, ...rest: Array<string | number>): Promise<[number, number]>
}

export interface RegroupParts {
  redis: RedisClient
  keys: KeyLayout
  replicated: Replicated
  channel: string
  /** How long a change's version is kept: the longest token lifetime (a Login older than that cannot be in flight). */
  changeTtlMs: number
}

export type Regroup = (accountId: string, groups: readonly string[], version: number, keyHashes: readonly string[]) => Promise<number>

/** The groups-change key of an account (in its bucket). */
export const groupsKey = (keys: KeyLayout, accountId: string): string => `${keys.bucketPrefix(accountBucket(accountId))}g${accountId}`

export function createRegroup ({ redis, keys, replicated, channel, changeTtlMs }: RegroupParts): Regroup {
  for (const [name, script] of Object.entries(SCRIPTS)) redis.defineCommand(name, script)
  const commands = redis as unknown as RegroupScripts

  /** Rewrites the records of these hashes; false when a later change took over. */
  const rewrite = async (gkey: string, version: number, field: string, hashes: readonly string[]): Promise<{ rewritten: number, replicas: number } | undefined> => {
    const [rewritten, replicas] = await commands.atsRegroupRecords(1 + hashes.length, gkey, ...hashes.map(keys.tokenKey), version, field, channel, ...hashes)
    return rewritten < 0 ? undefined : { rewritten, replicas }
  }

  return async (accountId, groups, version, keyHashes) => {
    const bucket = accountBucket(accountId)
    const prefix = keys.bucketPrefix(bucket)
    const gkey = `${prefix}g${accountId}`
    const index = `${prefix}a${accountId}`
    const field = groupsField(groups)
    if (await commands.atsRegroupBegin(gkey, version, field, changeTtlMs) === 0) return 0
    let rewritten = 0
    let replicas = 0
    // The index by score (an issue's order; scores are unique): a token issued or refreshed after
    // the change began took its groups from the change's key, so a cursor that misses it loses nothing.
    let cursor = '-inf'
    for (;;) {
      const page = await redis.zrangebyscore(index, cursor, '+inf', 'WITHSCORES', 'LIMIT', 0, REGROUP_BATCH)
      if (page.length === 0) break
      const members: string[] = []
      for (let i = 0; i < page.length; i += 2) members.push(page[i] ?? '')
      const done = await rewrite(gkey, version, field, members.map((member) => keys.hashOf(bucket, member)))
      if (done === undefined) return rewritten
      rewritten += done.rewritten
      replicas = Math.max(replicas, done.replicas)
      if (page.length < REGROUP_BATCH * 2) break
      cursor = `(${page[page.length - 1] ?? '+inf'}`
    }
    for (let i = 0; i < keyHashes.length; i += REGROUP_BATCH) {
      const batch = keyHashes.slice(i, i + REGROUP_BATCH).filter((hash) => keys.placeOf(hash)?.bucket === bucket)
      if (batch.length === 0) continue
      const done = await rewrite(gkey, version, field, batch)
      if (done === undefined) return rewritten
      rewritten += done.rewritten
      replicas = Math.max(replicas, done.replicas)
    }
    await replicated(gkey, replicas)
    return rewritten
  }
}
