import { unauthorized } from '../../errors/status.js'
import { hashToken, isTokenShaped } from '@auth-token-service/protocol/token'
import type { TokenRecord } from '@auth-token-service/protocol/layout'
import { hashApiKey, isApiKeyShaped } from '../api-key-secret.js'
import type { TokenStore } from '../stores/token-store.js'
import type { ApiKeyLookup } from '../ports.js'
import type { AuthService } from './types.js'

/**
 * Authenticate: what a presented credential is worth, a Login token's record or an API key's.
 * The hot path: one read of the token store, nothing written on the answer's path.
 */

/**
 * A Login token's active record, or 403: what the account's own changes (a password, sessions,
 * keys, a second factor) take. An OpenID Connect access token is refused here: it names the
 * account to the apps it went to, and changes nothing of the account.
 */
export const activeOrRefused = (record: TokenRecord | null): TokenRecord => {
  // A key's record is never a Login token's (the hashes of the two shapes never meet; this says so).
  if (record === null || record.keyId !== undefined || record.oidc !== undefined) throw unauthorized()
  return record
}

/** A bearer token's active record (a Login token's, or an OpenID Connect access token's), or 403. */
const activeBearer = (record: TokenRecord | null): TokenRecord => {
  if (record === null || record.keyId !== undefined) throw unauthorized()
  return record
}

export interface VerificationDeps {
  tokens: TokenStore
  /** API keys: absent, an `atsk_` secret is refused as any unknown token. */
  apiKeys?: ApiKeyLookup | undefined
}

export function createVerification ({ tokens, apiKeys }: VerificationDeps): Pick<AuthService, 'authenticate' | 'authenticateCredential'> {
  const activeKey = (record: TokenRecord | null): TokenRecord => {
    if (record?.keyId === undefined) throw unauthorized()
    apiKeys?.used(record.keyId)
    return record
  }

  // The store's own promise, chained, rather than another async frame around it.
  function authenticate (token: string | undefined): Promise<TokenRecord> {
    if (token === undefined || !isTokenShaped(token)) return Promise.reject(unauthorized())
    return tokens.find(hashToken(token)).then(activeOrRefused)
  }

  return {
    authenticate,

    authenticateCredential (token, client) {
      if (token === undefined || apiKeys === undefined || !isApiKeyShaped(token)) {
        if (token === undefined || !isTokenShaped(token)) return Promise.reject(unauthorized())
        return tokens.find(hashToken(token)).then(activeBearer)
      }
      const keyHash = hashApiKey(token)
      return tokens.find(keyHash)
        .then((record) => record ?? apiKeys.recover(keyHash, client?.ip ?? ''))
        .then(activeKey)
    }
  }
}
