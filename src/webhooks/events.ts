import { randomBytes } from 'node:crypto'
import type { AuditEvent, AuditEventName } from '../stores/audit-log.js'

/** The event types the contract names ("Lifecycle events and webhooks"), in its order. */
export const WEBHOOK_EVENT_TYPES = [
  'login.success', 'login.failure', 'login.new_device', 'logout', 'session.ended',
  'account.revoked', 'account.disabled', 'account.enabled', 'account.locked', 'password.changed',
  'key.created', 'key.revoked', 'totp.enabled', 'totp.disabled'
] as const

export type WebhookEventType = typeof WEBHOOK_EVENT_TYPES[number]

/**
 * Which audit event is which webhook event. Audit events not named here (an account added,
 * unlocked or deleted, a refused Login, a wrong admin key) are not sent.
 *
 * totp.enabled / totp.disabled: the contract's catalogue holds them; they are mapped here from
 * the audit events the second factor records (`totp.enable`, `totp.disable`) once those exist
 * (AuditEventName has no such member yet, so nothing is sent for them until it does).
 */
const TYPE_OF_AUDIT_EVENT: Partial<Record<AuditEventName, WebhookEventType>> = {
  'login.success': 'login.success',
  'login.failure': 'login.failure',
  'login.new_device': 'login.new_device',
  'login.lockout': 'account.locked',
  logout: 'logout',
  'session.end': 'session.ended',
  'sessions.end': 'session.ended',
  'sessions.revoke': 'account.revoked',
  'user.disable': 'account.disabled',
  'user.enable': 'account.enabled',
  'user.passwd': 'password.changed',
  'password.change': 'password.changed',
  'key.created': 'key.created',
  'key.revoked': 'key.revoked'
}

export function webhookTypeOf (event: AuditEventName): WebhookEventType | undefined {
  return TYPE_OF_AUDIT_EVENT[event]
}

export interface WebhookMessage {
  /** `msg_` and 128 random bits: the `webhook-id` of every attempt. */
  id: string
  type: WebhookEventType
  /** The JSON body, exactly as signed and sent. */
  body: string
}

/**
 * The webhook for an audit event, or undefined when none is sent. Built from the audit event's
 * own fields, which never hold a token, key secret, password, hash or TOTP secret.
 */
export function webhookMessage (event: AuditEvent, at: Date): WebhookMessage | undefined {
  const type = webhookTypeOf(event.event)
  if (type === undefined) return undefined
  const data: Record<string, unknown> = {
    account_id: event.accountId ?? null,
    username: event.username ?? null,
    client_ip: event.clientIp ?? null,
    user_agent: event.userAgent ?? null,
    outcome: event.outcome
  }
  if (event.tokensEnded !== undefined) data.tokens_ended = event.tokensEnded
  if (event.device !== undefined) data.device = { user_agent_family: event.device.userAgentFamily, network: event.device.network }
  return {
    id: `msg_${randomBytes(16).toString('base64url')}`,
    type,
    body: JSON.stringify({ type, timestamp: at.toISOString(), data })
  }
}
