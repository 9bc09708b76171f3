import * as crypto from 'node:crypto'

/** 256 bits from the CSPRNG, base64url: 43 characters, URL- and cookie-safe. */
export function generateToken (): string {
  return crypto.randomBytes(32).toString('base64url')
}

const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/

/**
 * A presented value can only be one of our tokens if it has our shape. Anything
 * else is answered like an unknown token without touching the store, so garbage
 * (Redis patterns, CRLF, hash tags) never reaches a key name.
 */
export function isTokenShaped (value: string): boolean {
  return TOKEN_SHAPE.test(value)
}

/** Node's one-shot digest (20.12+), without a Hash object per call; createHash before it. */
type OneShotHash = (algorithm: string, data: string, encoding: 'base64url') => string
const oneShot = (crypto as { hash?: OneShotHash }).hash
/** SHA-256 of `text`, base64url (43 characters). */
export const sha256 = oneShot === undefined
  ? (text: string): string => crypto.createHash('sha256').update(text).digest('base64url')
  : (text: string): string => oneShot('sha256', text, 'base64url')

/** Length of a token digest: 22 base64url characters. */
export const TOKEN_DIGEST_LENGTH = 22

/**
 * Only this digest is stored, so a leaked store does not hand out live tokens: SHA-256
 * of the token, base64url, its first 22 characters (132 bits). Tokens are 256 random
 * bits, so 132 bits of digest leave nothing to guess (finding a token for a stored
 * digest is a 2^132 search) and no collision in any real store (2^66 tokens); the
 * shorter key and account-index field keep an active token under 300 bytes of Redis.
 */
export function hashToken (token: string): string {
  return sha256(token).slice(0, TOKEN_DIGEST_LENGTH)
}
