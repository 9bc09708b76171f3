import { createHash, randomBytes } from 'node:crypto'

/** 256 bits from the CSPRNG, base64url: 43 characters, URL- and cookie-safe. */
export function generateToken (): string {
  return randomBytes(32).toString('base64url')
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

/** Only this digest is stored; a leaked store does not hand out live tokens. */
export function hashToken (token: string): string {
  return createHash('sha256').update(token).digest('base64url')
}
