import * as crypto from 'node:crypto'

/*
 * A token is `2` (the format's version) + a 2-character routing bucket + 43 random characters
 * (46 characters, 256 random bits). The bucket is derived from the account id (accountBucket),
 * so a token alone names the Redis Cluster slot its account's keys share; it is no secret and
 * not trusted: the digest covers the whole token, so a token with another bucket is only an
 * unknown token. The 43-character tokens of before 0.2.0 are no longer accepted (they
 * had all expired 24 hours after a 0.2.x rollout): one is a malformed token, answered as
 * an unknown one.
 */

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'

/** Buckets an account can be in: 1,024, named by two base64url characters (the first of them A to P). */
export const BUCKET_COUNT = 1024

/** The version character of a token. */
const VERSION = '2'

/** Every bucket name, in order (listDenied walks them). */
export const ALL_BUCKETS: readonly string[] = Array.from({ length: BUCKET_COUNT }, (_, n) => `${BASE64URL[n >> 6] ?? ''}${BASE64URL[n & 63] ?? ''}`)

/** The account's bucket: the first 10 bits of SHA-256(accountId), as two base64url characters. */
export function accountBucket (accountId: string): string {
  const digest = crypto.createHash('sha256').update(accountId).digest()
  const n = (((digest[0] ?? 0) << 8) | (digest[1] ?? 0)) & (BUCKET_COUNT - 1)
  return ALL_BUCKETS[n] ?? 'AA'
}

/**
 * A new token for the account: the version, the account's bucket, 43 characters (256 bits) from the CSPRNG after the version
 * and the account's bucket; URL- and cookie-safe.
 */
export function generateToken (accountId: string): string {
  return `${VERSION}${accountBucket(accountId)}${crypto.randomBytes(32).toString('base64url')}`
}

const TOKEN_SHAPE = /^2[A-Za-z0-9_-]{45}$/

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
 *
 * The hash starts with the token's bucket (24 characters: bucket + digest of the whole
 * token), so the one string a store is given names where the token lives. Only for a
 * token-shaped value (isTokenShaped): of anything else it is no token's hash. A pure function
 * of the token: it may be kept and used later.
 */
export function hashToken (token: string): string {
  return `${token.slice(1, 3)}${sha256(token).slice(0, TOKEN_DIGEST_LENGTH)}`
}

/** The cookie that carries the token (spec §2): set by Login, read by every operation, the client and the guard. */
export const TOKEN_COOKIE = 'AuthToken1'

/*
 * An API key: `atsk_` + the account's 2-character bucket + 43 base64url characters
 * (50 characters). Its hash has a token hash's layout (bucket + 22 digest characters of the
 * whole secret), so its record lives where a token's would, and the revocation feed carries it
 * as it carries a token's.
 */

/** The prefix of every API key (one secret scanners can match). */
export const API_KEY_PREFIX = 'atsk_'

const API_KEY_SHAPE = /^atsk_[A-Za-z0-9_-]{45}$/

/** Only a value of this shape can be one of the service's API keys: anything else is refused without a look-up. */
export function isApiKeyShaped (value: string): boolean {
  return API_KEY_SHAPE.test(value)
}

/** The stored digest of a key-shaped secret: its bucket and SHA-256's first 22 base64url characters (as hashToken). */
export function hashApiKey (secret: string): string {
  return `${secret.slice(API_KEY_PREFIX.length, API_KEY_PREFIX.length + 2)}${sha256(secret).slice(0, TOKEN_DIGEST_LENGTH)}`
}
