import { Type } from 'typebox'
import { ConfigError } from '../config-error.js'
import { variables, type Env } from '../variables.js'

/** Standard Webhooks (https://www.standardwebhooks.com) secrets are configured as `whsec_<base64>`, the form the receivers' libraries take. */
export const SECRET_PREFIX = 'whsec_'

/** Shortest secret accepted, in bytes: the spec asks for 24 to 64 (192 bits at least). */
export const MIN_SECRET_BYTES = 24

/** Lifecycle events as signed webhooks: where to, the signing secret, and the retry timings (src/webhooks). */
export const WebhooksSchema = Type.Object({
  AUTH_WEBHOOK_URL: Type.Array(Type.String({ format: 'uri', protocols: ['http:', 'https:'] }), { default: [], uniqueItems: true, docDefault: 'unset: no webhooks', description: 'lifecycle events are POSTed, signed, to each of these URLs (see [Webhooks](webhooks.md))' }),
  AUTH_WEBHOOK_SECRET: Type.Optional(Type.String({ writeOnly: true, expected: `${SECRET_PREFIX} and ${MIN_SECRET_BYTES}–64 bytes in base64 (\`${SECRET_PREFIX}$(openssl rand -base64 32)\`)`, docDefault: 'required with `AUTH_WEBHOOK_URL`', description: 'the Standard Webhooks signing secret' })),
  AUTH_WEBHOOK_TIMEOUT_SECONDS: Type.Integer({ minimum: 1, maximum: 300, default: 10, description: 'one delivery request\'s limit' }),
  AUTH_WEBHOOK_BACKOFF_SECONDS: Type.Integer({ minimum: 1, maximum: 3600, default: 5, description: 'the first retry\'s delay; each next one doubles, up to an hour, with jitter' }),
  AUTH_WEBHOOK_RETRY_HOURS: Type.Integer({ minimum: 24, maximum: 24 * 30, default: 24, description: 'how long an undelivered event is retried before it is marked `failed`' })
}, { $id: 'webhooks', title: 'Webhooks', description: 'Lifecycle events (logins, logouts, keys, accounts) POSTed, signed, to receivers ([Webhooks](webhooks.md)). Set `AUTH_WEBHOOK_URL` and `AUTH_WEBHOOK_SECRET` together, or neither.' })

export interface WebhookConfig {
  urls: string[]
  /** The signing secret's bytes, decoded from AUTH_WEBHOOK_SECRET once, here. */
  key: Buffer
  timeoutMs: number
  /** The first retry's delay; each next one doubles, up to an hour. */
  backoffMs: number
  /** How long an undelivered event is retried before it is marked failed (24 h at least). */
  retryWindowMs: number
  /** How often idle delivery loops look for due events. */
  pollMs: number
}

export interface WebhookSettings {
  /** Lifecycle events as signed webhooks; undefined: none sent. */
  webhooks: WebhookConfig | undefined
}

/** The secret's bytes, or a problem in words (never the secret itself). */
export function decodeWebhookSecret (configured: string): { ok: true, key: Buffer } | { ok: false, problem: string } {
  if (!configured.startsWith(SECRET_PREFIX)) return { ok: false, problem: `must start with ${SECRET_PREFIX}` }
  const encoded = configured.slice(SECRET_PREFIX.length)
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return { ok: false, problem: `must be ${SECRET_PREFIX} followed by base64` }
  const key = Buffer.from(encoded, 'base64')
  if (key.length < MIN_SECRET_BYTES || key.length > 64) return { ok: false, problem: `must hold ${MIN_SECRET_BYTES} to 64 bytes (openssl rand -base64 32), got ${key.length}` }
  return { ok: true, key }
}

export function readWebhooks (env: Env): WebhookSettings {
  const vars = variables(WebhooksSchema, env)
  const urls = vars.read('AUTH_WEBHOOK_URL')
  const secret = vars.read('AUTH_WEBHOOK_SECRET')
  if (urls.length === 0) {
    if (secret !== undefined) throw new ConfigError('AUTH_WEBHOOK_SECRET', 'is set but AUTH_WEBHOOK_URL is not: set both, or neither')
    return { webhooks: undefined }
  }
  if (secret === undefined) throw new ConfigError('AUTH_WEBHOOK_SECRET', `is required with AUTH_WEBHOOK_URL (${SECRET_PREFIX} and base64: echo ${SECRET_PREFIX}$(openssl rand -base64 32))`)
  const decoded = decodeWebhookSecret(secret)
  if (!decoded.ok) throw new ConfigError('AUTH_WEBHOOK_SECRET', decoded.problem)
  return {
    webhooks: {
      urls,
      key: decoded.key,
      timeoutMs: vars.read('AUTH_WEBHOOK_TIMEOUT_SECONDS') * 1000,
      backoffMs: vars.read('AUTH_WEBHOOK_BACKOFF_SECONDS') * 1000,
      retryWindowMs: vars.read('AUTH_WEBHOOK_RETRY_HOURS') * 3_600_000,
      pollMs: 1000
    }
  }
}
