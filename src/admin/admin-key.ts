import { createHash, timingSafeEqual } from 'node:crypto'

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest()

/** The credential of an `Authorization: Bearer <key>` header; undefined for any other form. */
export function bearerCredential (authorization: string | undefined): string | undefined {
  const match = authorization === undefined ? null : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization)
  return match?.[1]
}

/**
 * Whether an Authorization header carries one of the admin keys. Every key is compared, each by
 * SHA-256 digests of equal length with timingSafeEqual, so the time taken says nothing of how
 * much of a key was right, nor which key matched (the configured one or the local one).
 */
export function adminKeyCheck (keys: readonly string[]): (authorization: string | undefined) => boolean {
  const known = keys.map(digest)
  return (authorization) => {
    const presented = bearerCredential(authorization)
    // Compared even when nothing was sent: a missing header takes the time a wrong one does.
    const given = digest(presented ?? '')
    let accepted = false
    for (const key of known) accepted = timingSafeEqual(key, given) || accepted
    return accepted && presented !== undefined
  }
}
