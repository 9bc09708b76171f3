import { encodeRecord } from '@auth-token-service/guard/layout'
import type { ApiKeyRecords } from '../api-key-records.js'
import type { RedisClient } from '@auth-token-service/guard/shared/redis-connection'
import type { KeyLayout } from '@auth-token-service/guard/layout'
import type { Replicated } from './replicated.js'
import { pxArg, SHARED } from './scripts.js'

/*
 * API keys' records in the token layout (issue 33): `<b>t<digest>` as a token's, with the same
 * PX, but never in the account's index `<b>a<accountId>`. Two scripts, each atomic:
 *   atsSeedKey  SET unless the digest is in the bucket's deny set (a key just ended)
 *   atsEndKey   DEL, deny, PUBLISH, whether or not the record was there: a key Redis lost and
 *               nobody re-seeded yet is still denied, so a re-seed in flight cannot revive it
 */

const SCRIPTS = {
  // KEYS: token, deny   ARGV: value, ttlMs, member  -> 1 stored, 0 denied
  atsSeedKey: {
    numberOfKeys: 2,
    lua: `${SHARED}
local score = redis.call('ZSCORE', KEYS[2], ARGV[3])
if score and tonumber(score) > nowMs() then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
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
  }
} as const

interface KeyScripts {
  atsSeedKey (token: string, deny: string, value: string, ttlMs: number, member: string): Promise<number>
  atsEndKey (token: string, deny: string, member: string, denyTtlMs: number, channel: string, hash: string): Promise<number>
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
    async seedKey (keyHash, record, ttlMs) {
      const place = keys.placeOf(keyHash)
      if (place === undefined) return false
      return await commands.atsSeedKey(`${place.prefix}t${place.member}`, `${place.prefix}deny`, encodeRecord(record), pxArg(ttlMs), place.member) === 1
    },
    async endKey (keyHash) {
      const place = keys.placeOf(keyHash)
      if (place === undefined) return
      const key = `${place.prefix}t${place.member}`
      const replicas = await commands.atsEndKey(key, `${place.prefix}deny`, place.member, denyTtlMs, channel, keyHash)
      await replicated(key, replicas)
    }
  }
}
