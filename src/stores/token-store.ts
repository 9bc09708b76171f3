import type { TokenRecord } from '../tokens/record.js'

/**
 * Follows revocations as they happen, for caches of positive answers. Between
 * `interrupted` and the next `live`, messages may have been missed: a cache must
 * not be trusted then, and is dropped.
 */
export interface RevocationWatcher {
  revoked (tokenHashes: readonly string[]): void
  /** The feed is connected: from now on every revocation is delivered. */
  live (): void
  /** The feed was cut: revocations may be missed until the next `live`. */
  interrupted (): void
}

/**
 * Where active tokens live. Keys are SHA-256 digests of tokens, never tokens.
 * A token's life is its entry's own expiry, set relative (milliseconds to live)
 * from the instant its expiration date was computed: no sweep job, and no clock
 * difference between the service and the store can stretch or cut it.
 */
export interface TokenStore {
  /** Stores a new token for `ttlMs` milliseconds and adds it to its account's index. */
  issue (tokenHash: string, record: TokenRecord, ttlMs: number): Promise<void>
  /** The active token's record, or null for unknown, expired or terminated. One round trip. */
  find (tokenHash: string): Promise<TokenRecord | null>
  /**
   * Resets an active token of `record.accountId` to `ttlMs` from now with the new
   * expiry. False when the token is not active or belongs to another account: a
   * terminated token is never brought back.
   */
  refresh (tokenHash: string, record: TokenRecord, ttlMs: number): Promise<boolean>
  /**
   * Ends an active token at once and records its hash in the deny set. Returns the
   * ended token's record to the one caller that ended it; null to everyone else.
   */
  terminate (tokenHash: string): Promise<TokenRecord | null>
  /** Ends every active token of the account; returns the hashes it ended. */
  terminateAccount (accountId: string): Promise<string[]>
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
