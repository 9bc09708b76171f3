import type { TokenRecord } from '@auth-token-service/protocol/layout'
import { hashToken } from '@auth-token-service/protocol/token'
import type { TokenStore } from '../core/stores/token-store.js'
import type { ApiKeyRecords } from '../core/stores/api-key-records.js'
import type { UserStore } from '../core/stores/user-store.js'
import type { AccessTokenRecords } from './adapter.js'
import type { SignInLinks } from './sign-in-links.js'
import { idDigest, type ArtifactStore } from './artifact-store.js'

export interface AccessTokenDeps {
  tokens: Pick<TokenStore, 'issueUnder' | 'find'> & Pick<ApiKeyRecords, 'endKeys'>
  users: Pick<UserStore, 'findById'>
  links: SignInLinks
  /** Each client's tokens by hash (`<prefix>client:<id>`), for a client's removal to end them. */
  store: ArtifactStore
  prefix: string
}

/** A client's access tokens: ended when the client is removed. */
export function clientTokensKey (prefix: string, clientId: string): string {
  return `${prefix}client:${idDigest(clientId)}`
}

/**
 * An access token of the provider is a token of the service: its record (`kind: "oidc"`, the
 * client, the account's groups) written under the sign-in token its session stands on, in the
 * account's index. Ending that sign-in token (sign-out, Logout, a session ended by id) ends it; a
 * revoke-all, disable or password change of the account too; and guards hear of it at once.
 */
export function createAccessTokenRecords ({ tokens, users, links, store, prefix }: AccessTokenDeps): AccessTokenRecords {
  return {
    async issue (token, payload, ttlSeconds) {
      const { accountId, clientId, sessionUid } = payload
      if (typeof accountId !== 'string' || typeof clientId !== 'string' || typeof sessionUid !== 'string') return false
      const [account, parent] = await Promise.all([users.findById(accountId), links.signInOf(sessionUid)])
      if (account === null || account.disabled || parent === undefined) return false
      const ttlMs = ttlSeconds * 1000
      const record: TokenRecord = { accountId, username: account.username, federated: account.federated, expiresAt: Date.now() + ttlMs, oidc: { clientId } }
      if (account.groups.length > 0) record.groups = account.groups
      const hash = hashToken(token)
      if (!await tokens.issueUnder(parent, hash, record, ttlMs, account.tokenEpoch, account.groupsVersion)) return false
      await store.addMember(clientTokensKey(prefix, clientId), hash, ttlMs)
      return true
    },
    active: async (token) => await tokens.find(hashToken(token), true) !== null,
    async end (tokenHashes) {
      // Deleted, denied and announced whether or not the record was there, as an API key's end.
      await tokens.endKeys(tokenHashes)
    }
  }
}

/** Ends every access token a client holds (its removal: clients.ts `onRemoved`); the rest of its grants no longer find the client. */
export function clientTokenEnder (store: ArtifactStore, prefix: string, tokens: Pick<ApiKeyRecords, 'endKeys'>): (clientId: string) => Promise<void> {
  return async (clientId) => {
    const key = clientTokensKey(prefix, clientId)
    const hashes = await store.members(key)
    if (hashes.length > 0) await tokens.endKeys(hashes)
    await store.del([key])
  }
}
