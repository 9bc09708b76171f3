import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * HOTP (RFC 4226) and TOTP (RFC 6238) as authenticator apps compute them: HMAC-SHA-1, 30-second
 * steps from the Unix epoch, 6 digits. Written here (a few lines over node:crypto) rather than
 * taken from a package: the service's whole second factor rests on them, and the RFC's own test
 * vectors prove them (test/totp/rfc6238.test.ts).
 */

export const TOTP_STEP_SECONDS = 30
export const TOTP_DIGITS = 6
/** Steps of drift either way a code may come from (the contract: one). */
export const TOTP_DRIFT_STEPS = 1

export type HotpAlgorithm = 'sha1' | 'sha256' | 'sha512'

/** RFC 4226 §5.3: the dynamic truncation of HMAC(secret, counter), as `digits` decimal digits. */
export function hotp (secret: Buffer, counter: number, digits: number = TOTP_DIGITS, algorithm: HotpAlgorithm = 'sha1'): string {
  const message = Buffer.alloc(8)
  message.writeBigUInt64BE(BigInt(counter))
  const mac = createHmac(algorithm, secret).update(message).digest()
  const offset = (mac[mac.length - 1] ?? 0) & 0x0f
  const binary = mac.readUInt32BE(offset) & 0x7fffffff
  return String(binary % 10 ** digits).padStart(digits, '0')
}

/** The time step an instant falls in (RFC 6238 §4.2: T = floor((now - T0) / X), T0 = 0). */
export function stepAt (epochMs: number, stepSeconds: number = TOTP_STEP_SECONDS): number {
  return Math.floor(epochMs / 1000 / stepSeconds)
}

export function totpAt (secret: Buffer, epochMs: number, digits: number = TOTP_DIGITS, algorithm: HotpAlgorithm = 'sha1'): string {
  return hotp(secret, stepAt(epochMs), digits, algorithm)
}

/** Six digits and nothing else (spaces a person typed are taken out first: normalizedCode). */
export const CODE_SHAPE = /^\d{6}$/

/** A code as typed ("123 456"): without its spaces. */
export function normalizedCode (typed: string): string {
  return typed.replace(/[\s-]/g, '')
}

/**
 * The step whose code `code` is, within one step of drift of `epochMs`, or undefined. Every
 * candidate is compared (in constant time), whether or not an earlier one matched.
 */
export function matchingStep (secret: Buffer, code: string, epochMs: number): number | undefined {
  if (!CODE_SHAPE.test(code)) return undefined
  const given = Buffer.from(code)
  const now = stepAt(epochMs)
  let found: number | undefined
  for (let step = now - TOTP_DRIFT_STEPS; step <= now + TOTP_DRIFT_STEPS; step++) {
    if (timingSafeEqual(Buffer.from(hotp(secret, step)), given) && found === undefined) found = step
  }
  return found
}

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'

/** RFC 4648 base32 without padding: how authenticator apps take a secret. */
export function base32Encode (bytes: Buffer): string {
  let bits = 0
  let value = 0
  let out = ''
  for (const byte of bytes) {
    value = (value << 8) | byte
    bits += 8
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31]
      bits -= 5
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31]
  return out
}

/** Base32 as a person may copy it (lower case, spaces, padding); undefined for anything else. */
export function base32Decode (text: string): Buffer | undefined {
  const clean = text.replace(/[\s=]/g, '').toUpperCase()
  const bytes: number[] = []
  let bits = 0
  let value = 0
  for (const char of clean) {
    const index = BASE32.indexOf(char)
    if (index < 0) return undefined
    value = ((value << 5) | index) & 0xffff
    bits += 5
    if (bits >= 8) {
      bytes.push((value >>> (bits - 8)) & 0xff)
      bits -= 8
    }
  }
  return Buffer.from(bytes)
}

/** The `otpauth://` URI authenticator apps scan or take pasted (Google's Key Uri Format). */
export function otpauthUri (secretBase32: string, issuer: string, account: string): string {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(account)}`
  const params = new URLSearchParams({ secret: secretBase32, issuer, algorithm: 'SHA1', digits: String(TOTP_DIGITS), period: String(TOTP_STEP_SECONDS) })
  return `otpauth://totp/${label}?${params.toString()}`
}
