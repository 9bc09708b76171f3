import { randomBytes } from 'node:crypto'
import { accountBucket, sha256, TOKEN_DIGEST_LENGTH } from '@auth-token-service/guard/token'

/*
 * An API key's secret: `atsk_` (a prefix secret scanners can match), the account's 2-character
 * routing bucket, and 43 base64url characters of 256 random bits (50 characters). The bucket
 * puts its record in its account's Redis Cluster slot, as a token's (tokens/token.ts); it is no
 * secret and not trusted: the digest covers the whole secret. Its hash has a token hash's
 * layout (bucket + 22 digest characters), so the token store keeps its record where it keeps a
 * token's, and Authenticate reads it the same way.
 */

export const API_KEY_PREFIX = 'atsk_'

const API_KEY_SHAPE = /^atsk_[A-Za-z0-9_-]{45}$/

/** A new secret for a key of the account. */
export function generateApiKey (accountId: string): string {
  return `${API_KEY_PREFIX}${accountBucket(accountId)}${randomBytes(32).toString('base64url')}`
}

/** Only a value of this shape can be one of our keys: anything else is refused without a look-up. */
export function isApiKeyShaped (value: string): boolean {
  return API_KEY_SHAPE.test(value)
}

/** The stored digest of a key-shaped secret: its bucket and SHA-256's first 22 base64url characters (as hashToken). */
export function hashApiKey (secret: string): string {
  return `${secret.slice(API_KEY_PREFIX.length, API_KEY_PREFIX.length + 2)}${sha256(secret).slice(0, TOKEN_DIGEST_LENGTH)}`
}

const KEY_ID_SHAPE = /^[A-Za-z0-9_-]{16}$/

/** A key's public id: 96 random bits, base64url (16 characters); nothing to do with the secret. */
export function newKeyId (): string {
  return randomBytes(12).toString('base64url')
}

export function isKeyIdShaped (value: string): boolean {
  return KEY_ID_SHAPE.test(value)
}
