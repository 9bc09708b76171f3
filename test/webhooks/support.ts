import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { decodeWebhookSecret, type WebhookConfig } from '../../src/config/parts/webhooks.js'

/** A fresh Standard Webhooks secret: whsec_ and 32 random bytes in base64. */
export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`

/**
 * Webhooks to `urls` at test speed: a 50 ms poll and first retry. The request timeout is no test's
 * subject but the hanging receiver's (which sets its own): 30 s, which the test's own receiver on
 * loopback does not come near (with 2 s, its 503 was logged as a timeout at a load of 20).
 */
export function fastWebhooks (urls: string[], secret: string, overrides: Partial<WebhookConfig> = {}): WebhookConfig {
  const decoded = decodeWebhookSecret(secret)
  if (!decoded.ok) throw new Error(`a test's webhook secret ${decoded.problem}`)
  return { urls, key: decoded.key, timeoutMs: 30_000, backoffMs: 50, retryWindowMs: 86_400_000, pollMs: 50, ...overrides }
}

export const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
export const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0'
export const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36'

export interface LoginAnswer { status: number, token?: string }

export async function login (app: FastifyInstance, username: string, password: string, userAgent = FIREFOX, remoteAddress = '198.51.100.7'): Promise<LoginAnswer> {
  const res = await app.inject({ method: 'POST', url: '/auth/Login', headers: { ...FORM, 'user-agent': userAgent }, remoteAddress, payload: new URLSearchParams({ username, password }).toString() })
  return res.json()
}
