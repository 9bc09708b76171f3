import { reasons } from '../errors/reasons.js'
import { badRequest } from '../errors/status.js'

/**
 * An account's email address as it is kept: trimmed, the domain lower-cased, at most 254
 * characters (RFC 5321's path limit), a local part of 1 to 64 characters without spaces, angle
 * brackets, quotes or control characters, and a domain of dot-separated labels. Deliberately
 * narrower than RFC 5322: what it refuses (quoted local parts, comments) no mail form needs, and
 * nothing it keeps can smuggle a header or a second recipient.
 */
const LOCAL = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}$/
const DOMAIN = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/

export function normalizedEmail (raw: string): string | undefined {
  const value = raw.normalize('NFC').trim()
  const at = value.lastIndexOf('@')
  if (at <= 0 || value.length > 254) return undefined
  const local = value.slice(0, at)
  const domain = value.slice(at + 1).toLowerCase()
  if (!LOCAL.test(local) || !DOMAIN.test(domain) || local.startsWith('.') || local.endsWith('.') || local.includes('..')) return undefined
  return `${local}@${domain}`
}

/** The address kept, or the 400 saying it is not one (never repeating it). */
export function checkedEmail (raw: string): string {
  const email = normalizedEmail(raw)
  if (email === undefined) throw badRequest(reasons.emailNotValid())
  return email
}

/** An address as a log may show it: its domain only (the local part names a person). */
export function emailDomain (email: string): string {
  const at = email.lastIndexOf('@')
  return at < 0 ? '' : email.slice(at + 1)
}
