import { decodeRecord } from '@auth-token-service/protocol/layout'
import { accountBucket } from '@auth-token-service/protocol/token'
import type { RedisClient } from '@auth-token-service/protocol/redis-connection'
import type { EndMembers } from './end-members.js'
import type { KeyLayout, Place, TokenRecord } from '@auth-token-service/protocol/layout'
import type { Replicated } from './replicated.js'
import { epochArg, REVOKE_BATCH, type ScriptCommands } from './scripts.js'

/** Logout's and revoke-all's writes; each acknowledged only once replicated (replicated.ts). */
export interface Revoking {
  /** Ends one token: its record to the one caller that ended it, null to everyone else. */
  terminate (tokenHash: string): Promise<TokenRecord | null>
  /**
   * Ends every token of the account but `exceptTokenHash`, pushing each hash onto `ended` as
   * it goes (a caller that sees it fail part way knows how many were ended).
   */
  terminateAccount (accountId: string, epoch: number | undefined, exceptTokenHash: string | undefined, ended: string[]): Promise<void>
}

export interface RevokingParts {
  redis: RedisClient
  commands: ScriptCommands
  keys: KeyLayout
  endMembers: EndMembers
  replicated: Replicated
  denyTtlMs: number
  /** How long an account's revocation epoch is kept: at least the longest token lifetime. */
  epochTtlMs: number
  channel: string
}

export function createRevoking ({ redis, commands, keys, endMembers, replicated, denyTtlMs, epochTtlMs, channel }: RevokingParts): Revoking {
  const accountPlace = (accountId: string): Place => {
    const bucket = accountBucket(accountId)
    return { bucket, prefix: keys.bucketPrefix(bucket), member: '' }
  }
  return {
    async terminate (tokenHash) {
      const place = keys.placeOf(tokenHash)
      // No token hash: no token to end.
      if (place === undefined) return null
      const key = `${place.prefix}t${place.member}`
      // The record names the account, whose index the script must name in KEYS: read it first.
      const value = await redis.get(key)
      const found = value === null ? null : decodeRecord(value)
      if (found === null) return null
      const [ended, replicas] = await commands.atsTerminate(key, `${place.prefix}a${found.accountId}`, `${place.prefix}deny`,
        place.member, found.accountId, denyTtlMs, channel, tokenHash)
      if (ended === '') return null
      // The tokens given out under it (its OpenID Connect access tokens) end with it, before the answer.
      const link = `${place.prefix}L${place.member}`
      let children = await redis.zrange(link, '0', String(REVOKE_BATCH - 1))
      let counted = replicas
      while (children.length > 0) {
        const [, next, more] = await endMembers(place, link, children, REVOKE_BATCH)
        children = next
        counted = Math.max(counted, more)
      }
      await replicated(key, counted)
      return decodeRecord(ended)
    },
    /**
     * A revoke-all: the account's epoch recorded and its index set aside in one step
     * (atsRevokeBegin), then the set-aside drain ended REVOKE_BATCH tokens a script (atsEnd),
     * other commands running in between. Exact against racing Logins.
     */
    async terminateAccount (accountId, epoch, exceptTokenHash, ended) {
      const place = accountPlace(accountId)
      const p = place.prefix
      // The one token a password change keeps (the caller's own): taken back into the fresh index in the begin step.
      const except = exceptTokenHash === undefined ? undefined : keys.placeOf(exceptTokenHash)
      const exceptMember = except !== undefined && except.bucket === place.bucket ? except.member : ''
      const drain = `${p}r${accountId}`
      const epochKey = `${p}e${accountId}`
      let [members, replicas] = await commands.atsRevokeBegin(`${p}a${accountId}`, epochKey, drain, epochArg(epoch), epochTtlMs, REVOKE_BATCH, exceptMember)
      while (members.length > 0) {
        const [hashes, next, counted] = await endMembers(place, drain, members, REVOKE_BATCH)
        for (const hash of hashes) ended.push(hash)
        members = next
        replicas = Math.max(replicas, counted)
      }
      if (epoch !== undefined || ended.length > 0) await replicated(epochKey, replicas)
    }
  }
}
