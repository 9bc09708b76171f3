import { createHash, randomBytes } from 'node:crypto'

/**
 * A link's secret: 256 bits from the system's generator, base64url (43 characters). Only its
 * SHA-256 is stored to find the link by; the mail outbox keeps it sealed until the mail is sent.
 */
export const newLinkSecret = (): string => randomBytes(32).toString('base64url')

export const isLinkSecret = (value: string): boolean => /^[A-Za-z0-9_-]{43}$/.test(value)

export const linkSecretHash = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('hex')

/** The path a link opens; its secret is the last segment, which the access log shows as `:secret`. */
export const LINK_PATH = '/auth/reset'

/** The link a mail carries: AUTH_PUBLIC_URL and the path, never a request's Host or forwarded headers. */
export const linkUrl = (publicUrl: string, secret: string): string => `${publicUrl}${LINK_PATH}/${secret}`

/** The associated data a sealed link secret is bound to: one copied onto another account's row does not open. */
export const sealingContext = (accountId: string): string => `reset-link:${accountId}`
