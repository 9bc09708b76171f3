import { randomBytes } from 'node:crypto'
import { accountBucket, API_KEY_PREFIX } from '@auth-token-service/protocol/token'

/*
 * An API key's secret: `atsk_` (a prefix secret scanners can match), the account's 2-character
 * routing bucket, and 43 base64url characters of 256 random bits (50 characters). The bucket
 * puts its record in its account's Redis Cluster slot, as a token's (tokens/token.ts); it is no
 * secret and not trusted: the digest covers the whole secret. Its hash has a token hash's
 * layout (bucket + 22 digest characters), so the token store keeps its record where it keeps a
 * token's, and Authenticate reads it the same way.
 */

// The key's shape and hash are the guard package's (token.ts), which reads keys too.
export { API_KEY_PREFIX, hashApiKey, isApiKeyShaped } from '@auth-token-service/protocol/token'

/** A new secret for a key of the account. */
export function generateApiKey (accountId: string): string {
  return `${API_KEY_PREFIX}${accountBucket(accountId)}${randomBytes(32).toString('base64url')}`
}

const KEY_ID_SHAPE = /^[A-Za-z0-9_-]{16}$/

/**
 * A key's public id: 96 random bits, base64url (16 characters); nothing to do with the secret.
 * Never one that starts with a dash, which a command line would read as an option (`keys revoke
 * <id>`): one in 64 would (about 95.9 bits are left).
 */
export function newKeyId (): string {
  for (;;) {
    const id = randomBytes(12).toString('base64url')
    if (!id.startsWith('-')) return id
  }
}

export function isKeyIdShaped (value: string): boolean {
  return KEY_ID_SHAPE.test(value)
}
