import type { RevocationWatcher } from '@auth-token-service/protocol/feed'

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
