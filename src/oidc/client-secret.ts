import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

/**
 * A confidential client's secret: 32 random bytes, base64url, shown once when the client is
 * registered. Only its SHA-256 is kept (hex, as `secret_hash`): a dump of the table opens no
 * client. The provider authenticates a client by hashing what it presents and comparing digests.
 */

export const newClientSecret = (): string => randomBytes(32).toString('base64url')

export const hashClientSecret = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('hex')

/** Whether `presented` is the secret whose hash is `secretHash`; in constant time (both are digests of one length). */
export function clientSecretMatches (presented: string, secretHash: string): boolean {
  const expected = Buffer.from(secretHash, 'hex')
  const actual = createHash('sha256').update(presented, 'utf8').digest()
  return expected.length === actual.length && timingSafeEqual(expected, actual)
}

/** A client id: 16 random bytes, base64url, never starting with a dash (a command line would read it as an option). */
export function newClientId (): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url')
    if (!id.startsWith('-')) return id
  }
}

const CLIENT_ID_SHAPE = /^[A-Za-z0-9_-]{22}$/

/** Whether `value` could be a client id at all: anything else is unknown without asking the database. */
export const isClientIdShaped = (value: string): boolean => CLIENT_ID_SHAPE.test(value)
