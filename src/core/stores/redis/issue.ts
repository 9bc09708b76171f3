import { encodeRecord } from '@auth-token-service/protocol/layout'
import { accountBucket } from '@auth-token-service/protocol/token'
import type { EndMembers } from './end-members.js'
import type { KeyLayout, TokenRecord } from '@auth-token-service/protocol/layout'
import { epochArg, PRUNE_BATCH, pxArg, type ScriptCommands } from './scripts.js'

/** Login's writes: a new token in its account's index, and a refresh of one. */
export interface Issuing {
  issue (tokenHash: string, record: TokenRecord, ttlMs: number, epoch: number | undefined, groupsVersion: number | undefined): Promise<boolean>
  refresh (tokenHash: string, record: TokenRecord, ttlMs: number, epoch: number | undefined, groupsVersion: number | undefined): Promise<boolean>
  issueUnder (parentHash: string, tokenHash: string, record: TokenRecord, ttlMs: number, epoch: number | undefined, groupsVersion: number | undefined): Promise<boolean>
}

export interface IssuingParts {
  commands: ScriptCommands
  keys: KeyLayout
  /** Active tokens one account may hold; a Login beyond it ends the account's oldest. */
  maxTokens: number
  endMembers: EndMembers
  onCommandError: ((error: unknown) => void) | undefined
}

/**
 * A token is written with its account's index and epoch in one script (atsIssue, atsRefresh),
 * all in the account's bucket: the token hash names the bucket, and it must be the record's
 * account's (a token of another bucket would be indexed where no revoke-all of the account looks).
 */
export function createIssuing ({ commands, keys, maxTokens, endMembers, onCommandError }: IssuingParts): Issuing {
  return {
    async issue (tokenHash, record, ttlMs, epoch, groupsVersion) {
      const place = keys.placeOf(tokenHash)
      if (place === undefined) throw new TypeError('not a token hash: no token is issued under it')
      if (place.bucket !== accountBucket(record.accountId)) throw new TypeError('a token hash issued to an account of another bucket')
      const { prefix: p, member } = place
      const index = `${p}a${record.accountId}`
      const [issued, ...over] = await commands.atsIssue(`${p}t${member}`, index, `${p}e${record.accountId}`, `${p}g${record.accountId}`,
        encodeRecord(record), pxArg(ttlMs), member, epochArg(epoch), maxTokens, PRUNE_BATCH, epochArg(groupsVersion))
      if (issued === 0) return false
      // Past the cap: the account's oldest end (a second script: its keys are named in KEYS). Should it
      // fail, the token stands and the next Login of the account ends them.
      if (over.length > 0) await endMembers(place, index, over, 0).catch((error: unknown) => { onCommandError?.(error) })
      return true
    },
    async issueUnder (parentHash, tokenHash, record, ttlMs, epoch, groupsVersion) {
      const place = keys.placeOf(tokenHash)
      const parent = keys.placeOf(parentHash)
      if (place === undefined || parent === undefined) throw new TypeError('not a token hash: no token is issued under it')
      if (place.bucket !== accountBucket(record.accountId) || parent.bucket !== place.bucket) throw new TypeError('a token hash issued to an account of another bucket')
      const p = place.prefix
      return await commands.atsIssueUnder(`${p}t${place.member}`, `${p}a${record.accountId}`, `${p}e${record.accountId}`, `${p}g${record.accountId}`,
        `${p}t${parent.member}`, `${p}L${parent.member}`, encodeRecord(record), pxArg(ttlMs), place.member, epochArg(epoch), epochArg(groupsVersion)) === 1
    },
    async refresh (tokenHash, record, ttlMs, epoch, groupsVersion) {
      const place = keys.placeOf(tokenHash)
      // No token hash: no active token to refresh.
      if (place === undefined) return false
      const p = place.prefix
      return await commands.atsRefresh(`${p}t${place.member}`, `${p}a${record.accountId}`, `${p}e${record.accountId}`, `${p}g${record.accountId}`,
        encodeRecord(record), pxArg(ttlMs), place.member, record.accountId, epochArg(epoch), epochArg(groupsVersion)) === 1
    }
  }
}
