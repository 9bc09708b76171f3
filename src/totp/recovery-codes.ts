import { createHash, randomBytes } from 'node:crypto'
import { base32Encode } from './rfc6238.js'

/**
 * Recovery codes: ten per enrollment, each 80 random bits shown as four groups of four base32
 * characters (`ABCD-EFGH-JKLM-NPQR`); only their SHA-256 is stored (80 bits make a dump's hashes
 * no easier to reverse than to guess), each is accepted once, in the same `otp` parameter.
 */
export const RECOVERY_CODE_COUNT = 10

export function generateRecoveryCode (): string {
  return base32Encode(randomBytes(10)).match(/.{4}/g)?.join('-') ?? ''
}

/** A code as a person may type it (lower case, spaces or no dashes): its canonical form, or undefined. */
export function canonicalRecoveryCode (typed: string): string | undefined {
  const bare = typed.replace(/[\s-]/g, '').toUpperCase()
  return /^[A-Z2-7]{16}$/.test(bare) ? bare : undefined
}

export const hashRecoveryCode = (canonical: string): string => createHash('sha256').update(canonical, 'utf8').digest('base64url')
