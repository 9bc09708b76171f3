import { createHmac } from 'node:crypto'

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): HMAC-SHA256 over
 * `<webhook-id>.<webhook-timestamp>.<body>` with the secret's bytes, sent as `v1,<base64>`.
 * The secret is configured as `whsec_<base64>` and decoded once, where it is read
 * (config/parts/webhooks.ts decodeWebhookSecret).
 */

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
