import * as crypto from 'node:crypto'

/*
 * Two token versions are accepted:
 *   v1: 43 base64url characters, 256 random bits (issued before issue 23; they keep working until
 *       they expire, looked up where they always lived).
 *   v2: `2` + a 2-character routing bucket + 43 random characters (46 characters, 258 random bits).
 *       The bucket is derived from the account id (accountBucket), so a token alone names the Redis
 *       Cluster slot its account's keys share; it is no secret and not trusted: the digest covers
 *       the whole token, so a token with another bucket is only an unknown token.
 */

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'

/** Buckets an account can be in: 1,024, named by two base64url characters (the first of them A to P). */
export const BUCKET_COUNT = 1024

/** The version character of a v2 token. */
const V2 = '2'

/** Every bucket name, in order (listDenied walks them). */
export const ALL_BUCKETS: readonly string[] = Array.from({ length: BUCKET_COUNT }, (_, n) => `${BASE64URL[n >> 6] ?? ''}${BASE64URL[n & 63] ?? ''}`)

/** The account's bucket: the first 10 bits of SHA-256(accountId), as two base64url characters. */
export function accountBucket (accountId: string): string {
  const digest = crypto.createHash('sha256').update(accountId).digest()
  const n = (((digest[0] ?? 0) << 8) | (digest[1] ?? 0)) & (BUCKET_COUNT - 1)
  return ALL_BUCKETS[n] ?? 'AA'
}

/**
 * A new token for the account: v2, 43 characters (256 bits) from the CSPRNG after the version
 * and the account's bucket; URL- and cookie-safe.
 */
export function generateToken (accountId: string): string {
  return `${V2}${accountBucket(accountId)}${crypto.randomBytes(32).toString('base64url')}`
}

const TOKEN_SHAPE = /^(?:[A-Za-z0-9_-]{43}|2[A-Za-z0-9_-]{45})$/

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
 * A v2 token's hash starts with its bucket (24 characters: bucket + digest of the whole
 * token), so the one string a store is given names where the token lives; a v1 token's is
 * the bare digest (22). A pure function of the token: it may be kept and used later.
 */
export function hashToken (token: string): string {
  const digest = sha256(token).slice(0, TOKEN_DIGEST_LENGTH)
  return token.length === 46 && token.startsWith(V2) ? `${token.slice(1, 3)}${digest}` : digest
}
