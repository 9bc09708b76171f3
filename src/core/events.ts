import { randomBytes } from 'node:crypto'
import type { AuditEvent, AuditEventName } from './stores/audit-log.js'

/** The event types the contract names ("Lifecycle events and webhooks"), in its order. */
export const WEBHOOK_EVENT_TYPES = [
  'login.success', 'login.failure', 'login.new_device', 'logout', 'session.ended',
  'account.revoked', 'account.disabled', 'account.enabled', 'account.locked', 'password.changed',
  'key.created', 'key.revoked', 'totp.enabled', 'totp.disabled', 'account.groups_changed',
  'oidc.authorized', 'oidc.client_created', 'oidc.client_removed', 'password.reset'
] as const

export type WebhookEventType = typeof WEBHOOK_EVENT_TYPES[number]

/**
 * What `data.outcome` says, by type: every word the code records for the audit events each type
 * is sent for (a `<…>` part is filled in: a count, seconds, a key id, who acted). The emitters
 * check their outcomes against it (OutcomeOf), and docs/webhooks.md is compared with it by a test.
 */
export const WEBHOOK_OUTCOMES = {
  'login.success': ['issued', 'refreshed', 'issued-by-passkey', 'refreshed-by-passkey', 'issued-by-second-factor', 'refreshed-by-second-factor'],
  'login.failure': ['wrong-password', 'unknown-user', 'disabled', 'not-provisioned', 'wrong-code', 'reused-code', 'secret-unreadable',
    'wrong-passkey', 'wrong-second-factor', 'unusable-account'],
  'login.new_device': ['new-device'],
  logout: ['terminated'],
  'session.ended': ['terminated', 'terminated-by-<actor>', 'tokens-ended-<n>', 'tokens-ended-<n>-but-current', 'tokens-ended-<n>-by-<actor>',
    'tokens-ended-<n>-but-current-by-<actor>'],
  'account.revoked': ['tokens-ended-<n>', 'tokens-ended-<n>-incomplete'],
  'account.disabled': ['tokens-ended-<n>', 'tokens-ended-<n>-incomplete'],
  'account.enabled': ['tokens-ended-<n>'],
  'account.locked': ['locked-<seconds>s'],
  'password.changed': ['tokens-ended-<n>', 'tokens-ended-<n>-incomplete'],
  'key.created': ['created:<key id>'],
  'key.revoked': ['revoked:<key id>', 'already-ended:<key id>', 'account-disabled:<key id>', 'account-deleted:<key id>', 'revoke-all:<key id>',
    'account-disabled-incomplete:<key id>', 'account-deleted-incomplete:<key id>', 'revoke-all-incomplete:<key id>'],
  'totp.enabled': ['confirmed'],
  'totp.disabled': ['removed', 'reset'],
  'account.groups_changed': ['set:<groups>', 'directory:<groups>'],
  'oidc.authorized': ['code:<client id>', 'device:<client id>'],
  'oidc.client_created': ['created:<client id>'],
  'oidc.client_removed': ['removed:<client id>'],
  'password.reset': ['tokens-ended-<n>', 'tokens-ended-<n>-incomplete', 'invitation-accepted']
} as const satisfies Record<WebhookEventType, readonly string[]>

/** An outcome pattern as a type: each `<…>` part any text. */
type Filled<Pattern extends string> = Pattern extends `${infer Head}<${string}>${infer Tail}` ? `${Head}${string}${Filled<Tail>}` : Pattern

/** The outcomes a webhook type may carry (WEBHOOK_OUTCOMES), for the code that records them to be checked against. */
export type OutcomeOf<Type extends WebhookEventType> = Filled<typeof WEBHOOK_OUTCOMES[Type][number]>

/**
 * The second factor's audit events (its enrollment confirmed, its removal): named here ahead of
 * the audit trail's own list, so that they are sent from the moment the second factor records them.
 */
type SecondFactorAuditEvent = 'totp.enabled' | 'totp.disabled'

/**
 * Which audit event is which webhook event. Audit events not named here (an account added,
 * unlocked or deleted, a refused Login, a wrong admin key, a TOTP enrollment not yet confirmed)
 * are not sent.
 */
const TYPE_OF_AUDIT_EVENT: Partial<Record<AuditEventName | SecondFactorAuditEvent, WebhookEventType>> = {
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
  'key.revoked': 'key.revoked',
  'totp.enabled': 'totp.enabled',
  'totp.disabled': 'totp.disabled',
  'groups.change': 'account.groups_changed',
  'oidc.authorized': 'oidc.authorized',
  'oidc.client_created': 'oidc.client_created',
  'oidc.client_removed': 'oidc.client_removed',
  'password.reset': 'password.reset'
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
  if (event.groups !== undefined) data.groups = event.groups
  if (event.clientId !== undefined) data.client_id = event.clientId
  if (event.device !== undefined) data.device = { user_agent_family: event.device.userAgentFamily, network: event.device.network }
  return {
    id: `msg_${randomBytes(16).toString('base64url')}`,
    type,
    body: JSON.stringify({ type, timestamp: at.toISOString(), data })
  }
}
