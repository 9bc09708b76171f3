import { createHmac } from 'node:crypto'

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): HMAC-SHA256 over
 * `<webhook-id>.<webhook-timestamp>.<body>` with the secret's bytes, sent as `v1,<base64>`.
 * The secret is configured as `whsec_<base64>`, the form the receivers' libraries take.
 */

export const SECRET_PREFIX = 'whsec_'

/** Shortest secret accepted, in bytes: the spec asks for 24 to 64 (192 bits at least). */
export const MIN_SECRET_BYTES = 24

/** The secret's bytes, or a problem in words (never the secret itself). */
export function decodeWebhookSecret (configured: string): { ok: true, key: Buffer } | { ok: false, problem: string } {
  if (!configured.startsWith(SECRET_PREFIX)) return { ok: false, problem: `must start with ${SECRET_PREFIX}` }
  const encoded = configured.slice(SECRET_PREFIX.length)
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return { ok: false, problem: `must be ${SECRET_PREFIX} followed by base64` }
  const key = Buffer.from(encoded, 'base64')
  if (key.length < MIN_SECRET_BYTES || key.length > 64) return { ok: false, problem: `must hold 24 to 64 bytes (openssl rand -base64 32), got ${key.length}` }
  return { ok: true, key }
}

export interface SignedHeaders {
  'webhook-id': string
  'webhook-timestamp': string
  'webhook-signature': string
}

/** The three headers of one attempt: the timestamp is the attempt's (receivers refuse old ones), the id the event's. */
export function signWebhook (key: Buffer, id: string, body: string, nowMs: number): SignedHeaders {
  const timestamp = String(Math.floor(nowMs / 1000))
  const signature = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${signature}` }
}
