import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'

/**
 * A TOTP secret sealed for the database: AES-256-GCM under a key the database does not hold,
 * the account id as associated data (a sealed secret copied onto another account's row does
 * not open there). Format: `v1.<key id>.<iv>.<ciphertext and tag>` (base64url); the key id
 * (the first 8 hex digits of the key's SHA-256) says which key opens it, so that a rotated
 * key's secrets still open with the previous key until they are sealed again.
 */

export const TOTP_KEY_BYTES = 32

export interface TotpKeys {
  /** Seals new secrets. */
  current: Buffer
  /** Open secrets sealed before a rotation (AUTH_TOTP_PREVIOUS_KEYS). */
  previous: readonly Buffer[]
}

export const keyId = (key: Buffer): string => createHash('sha256').update(key).digest('hex').slice(0, 8)

/** The id of the key a sealed secret needs (to name it when none given opens it), or undefined when it is not one. */
export function sealedKeyId (sealed: string): string | undefined {
  const [version, id] = sealed.split('.')
  return version === 'v1' && id !== undefined && /^[0-9a-f]{8}$/.test(id) ? id : undefined
}

export function sealSecret (key: Buffer, secret: Buffer, accountId: string): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  cipher.setAAD(Buffer.from(accountId, 'utf8'))
  const body = Buffer.concat([cipher.update(secret), cipher.final(), cipher.getAuthTag()])
  return `v1.${keyId(key)}.${iv.toString('base64url')}.${body.toString('base64url')}`
}

export interface OpenedSecret {
  secret: Buffer
  /** Sealed with a previous key: seal it again with the current one. */
  stale: boolean
}

/** The secret, or undefined when no key given opens it (a wrong key, a changed row). */
export function openSecret (keys: TotpKeys, sealed: string, accountId: string): OpenedSecret | undefined {
  const [version, id, iv, body] = sealed.split('.')
  if (version !== 'v1' || id === undefined || iv === undefined || body === undefined) return undefined
  for (const key of [keys.current, ...keys.previous]) {
    if (keyId(key) !== id) continue
    try {
      const data = Buffer.from(body, 'base64url')
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'))
      decipher.setAAD(Buffer.from(accountId, 'utf8'))
      decipher.setAuthTag(data.subarray(data.length - 16))
      const secret = Buffer.concat([decipher.update(data.subarray(0, data.length - 16)), decipher.final()])
      return { secret, stale: key !== keys.current }
    } catch {
      return undefined
    }
  }
  return undefined
}
