import { UnavailableError } from '../lib/status.js'

/**
 * Where active tokens live. Keys are SHA-256 digests of tokens, never tokens.
 * A token's life is its entry's own expiry, set relative (milliseconds to live)
 * from the instant its expiration date was computed: no sweep job, and no clock
 * difference between the service and the store can stretch or cut it.
 */
export interface TokenRecord {
  accountId: string
  username: string
  federated: boolean
  /** Epoch milliseconds of the `expiration_date` the client was given. */
  expiresAt: number
}

/**
 * Follows revocations as they happen, for caches of positive answers. Between
 * `interrupted` and the next `live`, messages may have been missed: a cache must
 * not be trusted then, and is dropped.
 */
export interface RevocationWatcher {
  revoked (tokenHashes: readonly string[]): void
  /**
   * The feed is connected and proven current: every revocation published before the proof
   * was taken has been delivered. `validForMs`: how long that proof holds unless another
   * renews it (heartbeats: stores/feed-liveness.ts); undefined, until `interrupted`.
   */
  live (validForMs?: number): void
  /** The feed was cut: revocations may be missed until the next `live`. */
  interrupted (): void
}

export interface TokenStore {
  /**
   * Stores a new token for `ttlMs` milliseconds and adds it to its account's index: true.
   * With `epoch` (the account's revocation epoch, read before its password was checked),
   * false and nothing stored when a revocation of the account has passed that epoch since
   * (terminateAccount): the Login was overtaken and must not get a token.
   */
  issue (tokenHash: string, record: TokenRecord, ttlMs: number, epoch?: number): Promise<boolean>
  /** The active token's record, or null for unknown, expired or terminated. One round trip. */
  find (tokenHash: string): Promise<TokenRecord | null>
  /**
   * Resets an active token of `record.accountId` to `ttlMs` from now with the new
   * expiry. False when the token is not active or belongs to another account: a
   * terminated token is never brought back; false too when `epoch` is stale, as for issue.
   */
  refresh (tokenHash: string, record: TokenRecord, ttlMs: number, epoch?: number): Promise<boolean>
  /**
   * Ends an active token at once and records its hash in the deny set. Returns the
   * ended token's record to the one caller that ended it; null to everyone else.
   */
  terminate (tokenHash: string): Promise<TokenRecord | null>
  /**
   * Ends every active token of the account; returns the hashes it ended. With `epoch` (the
   * account's epoch after the revocation raised it), first records it beside the account's
   * tokens, atomically with ending the first of them: from then on an issue or refresh
   * carrying an older epoch is refused. Kept for at least the longest token lifetime.
   */
  terminateAccount (accountId: string, epoch?: number): Promise<string[]>
  /** True while a terminated token's hash is in the short-lived deny set. */
  isDenied (tokenHash: string): Promise<boolean>
  /** Every hash in the deny set now (the catch-up list for caching verifiers). */
  listDenied (): Promise<string[]>
  /** Delivers every terminate and terminateAccount, from any instance sharing the store. Returns an unsubscribe. */
  watchRevocations (watcher: RevocationWatcher): () => void
  /** Resolves when the store answers (readiness checks); a 503 StatusError otherwise. */
  ping (): Promise<void>
  close (): Promise<void>
}

/**
 * The record while its token is active by the service's clock: strictly before `expiresAt`,
 * the second `expiration_date` names. A key's PX counts from the moment of its write, a few
 * milliseconds after the instant the date was computed from, so the key alone would answer
 * Success just after the named second (issue 20 §5); this never does.
 */
export function activeAt (record: TokenRecord | null, nowMs: number): TokenRecord | null {
  return record !== null && nowMs < record.expiresAt ? record : null
}

/** Compact, order-fixed value: `expiresAt|federated|accountId|username` (username last: it may hold `|`). */
export function encodeRecord (record: TokenRecord): string {
  return `${record.expiresAt}|${record.federated ? 1 : 0}|${record.accountId}|${record.username}`
}

export function decodeRecord (value: string): TokenRecord | null {
  const first = value.indexOf('|')
  const second = value.indexOf('|', first + 1)
  const third = value.indexOf('|', second + 1)
  if (first < 0 || second < 0 || third < 0) return null
  const expiresAt = Number(value.slice(0, first))
  if (!Number.isFinite(expiresAt)) return null
  return {
    expiresAt,
    federated: value.slice(first + 1, second) === '1',
    accountId: value.slice(second + 1, third),
    username: value.slice(third + 1)
  }
}

/**
 * A revoke-all that failed part way (Redis went away between two of its bounded steps): the
 * epoch was recorded, so no Login begun before it gets a token, and `ended` tokens were ended;
 * the others stay set aside and the next revoke-all of the account ends them. A 503.
 */
export class RevocationIncomplete extends UnavailableError {
  constructor (readonly ended: number, cause?: unknown) {
    super('redis', cause)
  }
}
