import type { KeyLayout, Place } from '@auth-token-service/protocol/layout'
import type { ScriptCommands } from './scripts.js'

/**
 * Ends `members` (digests) of a bucket, removed from `from` (an account's index, or the drain
 * a revoke-all set aside): each token still active is deleted, denied and published. Returns
 * the hashes it ended, the next `next` members of `from` (0: none), and the replicas connected
 * to the bucket's master (for replicated.ts).
 */
export type EndMembers = (place: Pick<Place, 'bucket' | 'prefix'>, from: string, members: string[], next: number) => Promise<[string[], string[], number]>

export interface EndMembersParts {
  commands: ScriptCommands
  keys: KeyLayout
  denyTtlMs: number
  channel: string
}

/**
 * One script a batch (atsEnd): its token keys are named in KEYS, so the batch is bounded by
 * the caller (the cap's overflow at a Login, REVOKE_BATCH in a revoke-all).
 */
export function createMemberEnder ({ commands, keys, denyTtlMs, channel }: EndMembersParts): EndMembers {
  return async (place, from, members, next) => {
    const [ended, following, replicas] = await commands.atsEnd(2 + members.length, from, `${place.prefix}deny`,
      ...members.map((member) => `${place.prefix}t${member}`), denyTtlMs, channel, place.bucket, next, ...members)
    return [ended.map((member) => keys.hashOf(place.bucket, member)), following, replicas]
  }
}
