import { createHash, timingSafeEqual } from 'node:crypto'

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest()

/** A key the admin API takes, and the name its changes are recorded under (never the key). */
export interface AdminKey {
  key: string
  credential: string
}

/**
 * How the audit trail names the configured admin key: `key:` and the first 8 hex digits of its
 * SHA-256. It tells keys apart across a rotation; 32 bits of a digest say nothing of a 256-bit key.
 */
export function keyFingerprint (key: string): string {
  return `key:${digest(key).toString('hex').slice(0, 8)}`
}

/** The credential of an `Authorization: Bearer <key>` header; undefined for any other form. */
export function bearerCredential (authorization: string | undefined): string | undefined {
  const match = authorization === undefined ? null : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization)
  return match?.[1]
}

/**
 * Which admin key an Authorization header carries: its credential name, or undefined for none.
 * Every key is compared, each by SHA-256 digests of equal length with timingSafeEqual, so the
 * time taken says nothing of how much of a key was right, nor which key matched.
 */
export function adminKeyCheck (keys: readonly AdminKey[]): (authorization: string | undefined) => string | undefined {
  const known = keys.map(({ key, credential }) => ({ digest: digest(key), credential }))
  return (authorization) => {
    const presented = bearerCredential(authorization)
    // Compared even when nothing was sent: a missing header takes the time a wrong one does.
    const given = digest(presented ?? '')
    let matched: string | undefined
    for (const key of known) {
      if (timingSafeEqual(key.digest, given)) matched ??= key.credential
    }
    return presented === undefined ? undefined : matched
  }
}
