import { UnavailableError } from '../../errors/status.js'
import type { TokenRecord } from '@auth-token-service/protocol/layout'

/**
 * Where active tokens live. Keys are SHA-256 digests of tokens, never tokens.
 * A token's life is its entry's own expiry, set relative (milliseconds to live)
 * from the instant its expiration date was computed: no sweep job, and no clock
 * difference between the service and the store can stretch or cut it.
 */
export interface TokenStore {
  /** Which implementation this is: named in readiness answers and the start-up line, and it picks the limiter beside it. */
  readonly kind: 'redis' | 'in-process'
  /** Resolves once the store can answer (its connection is ready); at once for the in-process one. */
  ready (): Promise<void>
  /**
   * Stores a new token for `ttlMs` milliseconds and adds it to its account's index: true.
   * `groupsVersion`: the account's, read with the record's groups (regroup).
   * With `epoch` (the account's revocation epoch, read before its password was checked),
   * false and nothing stored when a revocation of the account has passed that epoch since
   * (terminateAccount): the Login was overtaken and must not get a token.
   */
  issue (tokenHash: string, record: TokenRecord, ttlMs: number, epoch?: number, groupsVersion?: number): Promise<boolean>
  /**
   * Stores a token given out under `parentHash` (an OpenID Connect access token under the
   * sign-in token it came from): true, in its account's index (a revoke-all ends it) and linked to
   * the parent, so that ending the parent (`terminate`) ends it too. False and nothing stored when
   * the parent is not active, or a revocation overtook `epoch` (as for issue).
   */
  issueUnder (parentHash: string, tokenHash: string, record: TokenRecord, ttlMs: number, epoch?: number, groupsVersion?: number): Promise<boolean>
  /**
   * The active token's record, or null for unknown, expired, terminated or idle. One round trip.
   * A find is a presentation of the token (it keeps it from going idle: AUTH_IDLE_TIMEOUT_SECONDS)
   * unless `peek` (a listing of the account's sessions looks at them without using them).
   */
  find (tokenHash: string, peek?: boolean): Promise<TokenRecord | null>
  /**
   * Resets an active token of `record.accountId` to `ttlMs` from now with the new
   * expiry. False when the token is not active or belongs to another account: a
   * terminated token is never brought back; false too when `epoch` is stale, as for issue.
   */
  refresh (tokenHash: string, record: TokenRecord, ttlMs: number, epoch?: number, groupsVersion?: number): Promise<boolean>
  /**
   * The account's groups changed (to `groups`, at `version`, its groups version after the
   * change): every live record of the account (its Login tokens, and its API keys by `keyHashes`)
   * carries them from the return on, each rewritten in place (its expiry kept) and announced on
   * the revocation feed so that caches read it again; an issue, refresh or key seed that read an
   * older version writes these groups instead (`groupsVersion` of those). A later change already
   * applied wins. Acknowledged as a revocation is (replicated). Returns the records rewritten.
   */
  regroup (accountId: string, groups: readonly string[], version: number, keyHashes: readonly string[]): Promise<number>
  /**
   * Ends an active token at once and records its hash in the deny set, and every token given out
   * under it (issueUnder). Returns the ended token's record to the one caller that ended it; null
   * to everyone else.
   */
  terminate (tokenHash: string): Promise<TokenRecord | null>
  /**
   * Ends every active token of the account; returns the hashes it ended. With `epoch` (the
   * account's epoch after the revocation raised it), first records it beside the account's
   * tokens, atomically with ending the first of them: from then on an issue or refresh
   * carrying an older epoch is refused. Kept for at least the longest token lifetime.
   * `exceptTokenHash`: that one token stays active, in the account's index (a password change
   * ends every session but the caller's); an issue or refresh of it carrying the
   * new epoch goes on working.
   */
  terminateAccount (accountId: string, epoch?: number, exceptTokenHash?: string): Promise<string[]>
  /** Resolves when the store answers (readiness checks); a 503 StatusError otherwise. */
  ping (): Promise<void>
  close (): Promise<void>
}

/**
 * A revoke-all that failed part way (Redis went away between two of its bounded steps): the
 * epoch was recorded, so no Login begun before it gets a token, and `ended` tokens were ended;
 * the others stay set aside and the next revoke-all of the account ends them. A 503.
 */
export class RevocationIncomplete extends UnavailableError {
  readonly ended: number
  constructor (ended: number, cause?: unknown) {
    super('redis', cause)
    this.ended = ended
  }
}
