import { ALL_BUCKETS } from '@auth-token-service/protocol/token'
import type { RedisClient } from '@auth-token-service/protocol/redis-connection'
import type { KeyLayout } from '@auth-token-service/protocol/layout'
import type { ScriptCommands } from './scripts.js'

/** The ended tokens' deny entries, for caches of positive answers (RevocationFeed). */
export interface DenyList {
  isDenied (tokenHash: string): Promise<boolean>
  listDenied (): Promise<string[]>
}

export function createDenyList (redis: RedisClient, commands: ScriptCommands, keys: KeyLayout): DenyList {
  return {
    async isDenied (tokenHash) {
      const place = keys.placeOf(tokenHash)
      return place !== undefined && await commands.atsDenied(`${place.prefix}deny`, place.member) === 1
    },
    // Every bucket's: 1,024 plain ZRANGEs sent together (no script: a Lua call each cost a
    // Cluster under load its command timeout). A bucket's list may hold entries a few moments
    // past their deny time (they are pruned as the bucket takes new ones, and the key expires
    // with its last entry): a catch-up list of ended tokens, so one too many only drops a
    // cache entry of an ended token.
    listDenied: async () => (await Promise.all(ALL_BUCKETS.map(async (bucket) =>
      (await redis.zrange(`${keys.bucketPrefix(bucket)}deny`, '0', '-1')).map((member) => keys.hashOf(bucket, member))))).flat()
  }
}
