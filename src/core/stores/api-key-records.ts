import type { TokenRecord } from '@auth-token-service/protocol/layout'

/**
 * What the token stores keep of API keys: a key's record lives where a token's does,
 * keyed by the secret's hash and expiring as a token does, so every reader of tokens (Authenticate,
 * /auth/verify, /auth/introspect, caching guards) reads it the same way. It is kept out of its
 * account's token index: a password change's revoke-all ends the account's tokens and leaves its
 * keys; disabling and revoke-all end the keys by name (api-keys/api-keys.ts).
 */
export interface ApiKeyRecords {
  /**
   * Stores a key's record for `ttlMs`. False, and nothing stored, while the hash is denied (the
   * key was ended within the deny time): a re-seed that read Postgres before a revocation cannot
   * bring the key back after it. `groupsVersion`: the account's, read with the record's groups
   * (a later change's groups are written instead, as for a token's issue).
   */
  seedKey (keyHash: string, record: TokenRecord, ttlMs: number, groupsVersion?: number): Promise<boolean>
  /**
   * Ends a key whether its record is held or not: deleted, denied and announced on the revocation
   * feed in one step, acknowledged as a Logout is (replicated; refused while Redis may lose it).
   */
  endKey (keyHash: string): Promise<void>
  /**
   * Ends many keys as endKey ends one, in one step: an account's keys at a revoke-all or a
   * disable, written together and acknowledged once (one replication wait, not one a key).
   */
  endKeys (keyHashes: readonly string[]): Promise<void>
}
