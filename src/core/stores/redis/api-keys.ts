import { encodeRecord } from '@auth-token-service/protocol/layout'
import type { ApiKeyRecords } from '../api-key-records.js'
import type { RedisClient } from '@auth-token-service/protocol/redis-connection'
import type { KeyLayout, Place } from '@auth-token-service/protocol/layout'
import type { Replicated } from './replicated.js'
import { epochArg, pxArg, SHARED } from './scripts.js'
import { GROUPS_SHARED } from './regroup-lua.js'

/*
 * API keys' records in the token layout: `<b>t<digest>` as a token's, with the same
 * PX, but never in the account's index `<b>a<accountId>`. Three scripts, each atomic:
 *   atsSeedKey  SET unless the digest is in the bucket's deny set (a key just ended)
 *   atsEndKey   DEL, deny, PUBLISH, whether or not the record was there: a key Redis lost and
 *               nobody re-seeded yet is still denied, so a re-seed in flight cannot revive it
 *   atsEndKeys  the same for up to END_KEYS_BATCH keys of one bucket, one message for all
 */

/**
 * Keys one atsEndKeys script ends: an account's keys share its bucket, and the per-account cap
 * (50 by default) fits one script; more (keys made before the cap) go in several scripts sent
 * together, each short (a DEL and a ZADD a key) so that no account's keys hold Redis for long.
 */
export const END_KEYS_BATCH = 256

const SCRIPTS = {
  // KEYS: token, deny, groups change (regroup.ts)   ARGV: value, ttlMs, member, groups version ('' : none)  -> 1 stored, 0 denied
  atsSeedKey: {
    numberOfKeys: 3,
    lua: `${SHARED}${GROUPS_SHARED}
local score = redis.call('ZSCORE', KEYS[2], ARGV[3])
if score and tonumber(score) > nowMs() then return 0 end
redis.call('SET', KEYS[1], currentGroups(KEYS[3], ARGV[4], ARGV[1]), 'PX', tonumber(ARGV[2]))
return 1`
  },
  // KEYS: token, deny   ARGV: member, denyTtlMs, channel, hash  -> replicas
  atsEndKey: {
    numberOfKeys: 2,
    lua: `${SHARED}
redis.call('DEL', KEYS[1])
deny(KEYS[2], {ARGV[1]}, tonumber(ARGV[2]), nowMs())
redis.call('PUBLISH', ARGV[3], ARGV[4])
return replicas()`
  },
  // KEYS: deny, token...   ARGV: denyTtlMs, channel, hashes (space-separated), member...  -> replicas
  atsEndKeys: {
    lua: `${SHARED}
local members = {}
for i = 2, #KEYS do
  redis.call('DEL', KEYS[i])
  members[#members + 1] = ARGV[i + 2]
end
deny(KEYS[1], members, tonumber(ARGV[1]), nowMs())
redis.call('PUBLISH', ARGV[2], ARGV[3])
return replicas()`
  }
} as const

interface KeyScripts {
  atsSeedKey (token: string, deny: string, groupsKey: string, value: string, ttlMs: number, member: string, groupsVersion: string): Promise<number>
  atsEndKey (token: string, deny: string, member: string, denyTtlMs: number, channel: string, hash: string): Promise<number>
  atsEndKeys (numberOfKeys: number, deny: string, ...rest: Array<string | number>): Promise<number>
}

export interface RedisApiKeyParts {
  redis: RedisClient
  keys: KeyLayout
  replicated: Replicated
  denyTtlMs: number
  channel: string
}

export function createRedisApiKeyRecords ({ redis, keys, replicated, denyTtlMs, channel }: RedisApiKeyParts): ApiKeyRecords {
  for (const [name, script] of Object.entries(SCRIPTS)) redis.defineCommand(name, script)
  const commands = redis as unknown as KeyScripts
  return {
    async seedKey (keyHash, record, ttlMs, groupsVersion) {
      const place = keys.placeOf(keyHash)
      if (place === undefined) return false
      return await commands.atsSeedKey(`${place.prefix}t${place.member}`, `${place.prefix}deny`, `${place.prefix}g${record.accountId}`,
        encodeRecord(record), pxArg(ttlMs), place.member, epochArg(groupsVersion)) === 1
    },
    async endKey (keyHash) {
      const place = keys.placeOf(keyHash)
      if (place === undefined) return
      const key = `${place.prefix}t${place.member}`
      const replicas = await commands.atsEndKey(key, `${place.prefix}deny`, place.member, denyTtlMs, channel, keyHash)
      await replicated(key, replicas)
    },
    async endKeys (keyHashes) {
      // By bucket (one Cluster slot each; an account's keys are all in its own), in batches sent
      // together, then one replication wait a bucket: not a script and a WAIT a key.
      const buckets = new Map<string, Place[]>()
      for (const keyHash of keyHashes) {
        const place = keys.placeOf(keyHash)
        if (place === undefined) continue
        const batch = buckets.get(place.prefix)
        if (batch === undefined) buckets.set(place.prefix, [place])
        else batch.push(place)
      }
      await Promise.all([...buckets].map(async ([prefix, places]) => {
        const batches: Place[][] = []
        for (let i = 0; i < places.length; i += END_KEYS_BATCH) batches.push(places.slice(i, i + END_KEYS_BATCH))
        const replicas = await Promise.all(batches.map(async (batch) => await commands.atsEndKeys(1 + batch.length, `${prefix}deny`,
          ...batch.map((place) => `${prefix}t${place.member}`), denyTtlMs, channel, batch.map((place) => keys.hashOf(place.bucket, place.member)).join(' '),
          ...batch.map((place) => place.member))))
        await replicated(`${prefix}deny`, Math.max(...replicas))
      }))
    }
  }
}
