import { hashToken, isTokenShaped } from '@auth-token-service/protocol/token'
import type { TokenRecord } from '@auth-token-service/protocol/layout'
import type { TokenStore } from '../core/stores/token-store.js'

/** A browser's sign-in as the provider takes it: its token's hash (the store's key) and record. */
export interface SignInToken {
  hash: string
  record: TokenRecord
}

/**
 * The browser's sign-in from its AuthToken1 cookie's value: an active Login token, never an access
 * token of the provider's nor an API key (neither signs a person in). Peeks: looking does not
 * keep the sign-in from going idle. Undefined for anything else.
 */
export async function signInToken (tokens: Pick<TokenStore, 'find'>, cookie: string | undefined): Promise<SignInToken | undefined> {
  if (cookie === undefined || !isTokenShaped(cookie)) return undefined
  const hash = hashToken(cookie)
  const record = await tokens.find(hash, true)
  if (record === null || record.oidc !== undefined || record.keyId !== undefined) return undefined
  return { hash, record }
}
