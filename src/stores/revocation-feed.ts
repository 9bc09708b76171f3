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

/**
 * The ended tokens, for caches of positive answers (the guard, the revocations route): apart
 * from TokenStore, which issues and ends tokens. The service's token stores implement both in
 * one object, so a terminate's delete, deny-set entry and publish stay one Lua script.
 */
export interface RevocationFeed {
  /** True while a terminated token's hash is in the short-lived deny set. */
  isDenied (tokenHash: string): Promise<boolean>
  /** Every hash in the deny set now (the catch-up list for caching verifiers). */
  listDenied (): Promise<string[]>
  /** Delivers every terminate and terminateAccount, from any instance sharing the store. Returns an unsubscribe. */
  watchRevocations (watcher: RevocationWatcher): () => void
}
