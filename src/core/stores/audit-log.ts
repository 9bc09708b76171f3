import type { Queryable } from '../../db/database.js'
import { webhookMessage } from '../events.js'

export type AuditEventName =
  | 'login.success' | 'login.failure' | 'login.refused' | 'login.lockout'
  | 'logout' | 'sessions.revoke' | 'user.add' | 'user.passwd' | 'user.disable' | 'user.enable'
  | 'session.end' | 'sessions.end' | 'password.change'
  | 'user.unlock' | 'user.delete' | 'admin.unauthorized' | 'introspect.unauthorized'
  | 'key.created' | 'key.revoked' | 'login.new_device'
  | 'totp.enrolled' | 'totp.enabled' | 'totp.disabled' | 'totp.recovery_used'
  | 'groups.change'
  | 'oidc.authorized' | 'oidc.client_created' | 'oidc.client_removed'
  | 'webhook.retry' | 'mail.retry' | 'password.reset' | 'user.email' | 'user.invite'

/** Every event name, for filters that must name one (the admin API's `event`). */
export const AUDIT_EVENT_NAMES: readonly AuditEventName[] = [
  'login.success', 'login.failure', 'login.refused', 'login.lockout', 'logout', 'sessions.revoke',
  'user.add', 'user.passwd', 'user.disable', 'user.enable', 'session.end', 'sessions.end', 'password.change',
  'user.unlock', 'user.delete', 'admin.unauthorized', 'introspect.unauthorized', 'key.created', 'key.revoked',
  'totp.enrolled', 'totp.enabled', 'totp.disabled', 'totp.recovery_used', 'login.new_device', 'groups.change',
  'oidc.authorized', 'oidc.client_created', 'oidc.client_removed', 'webhook.retry', 'mail.retry', 'password.reset', 'user.email', 'user.invite'
]

export interface AuditEvent {
  event: AuditEventName
  username?: string | undefined
  accountId?: string | undefined
  clientIp?: string | undefined
  userAgent?: string | undefined
  /** The credential that made an administrative change (`key:<fingerprint>`, `local-cli`, …); never a secret. */
  credential?: string | undefined
  /** The account that made an administrative change from the admin console (its username); absent for the admin API, the command line and a person's own requests. */
  actor?: string | undefined
  /** What happened, in a word or two: success, wrong-password, unknown-user, account-locked, ... Never a secret. */
  outcome: string
  /** How many active tokens the event ended (logout: 1; revocations: any). Counted, not stored. */
  tokensEnded?: number
  /** login.new_device: the client the account had not used (sent in the webhook, not stored in the trail). */
  device?: { userAgentFamily: string, network: string } | undefined
  /** groups.change: the account's groups after it, every source (sent in the webhook as `data.groups`). */
  groups?: readonly string[] | undefined
  /** oidc.authorized: the OpenID Connect client the account authorized (sent in the webhook as `data.client_id`; the outcome names it too). */
  clientId?: string | undefined
}

export interface StoredAuditEvent extends AuditEvent {
  /** The row's id: with occurredAt, where the next page starts. */
  id: string
  occurredAt: Date
}

export interface AuditFilter {
  username?: string | undefined
  since?: Date | undefined
  /** An event name; other strings match nothing. */
  event?: string | undefined
  /** Keyset pagination: only events after this one (in time, then id order). */
  after?: { occurredAt: Date, id: string } | undefined
  limit?: number
}

export interface AuditLog {
  /** Queues the event and returns at once: writing it never blocks or fails the caller. */
  record (event: AuditEvent): void
  /** Events written so far that were dropped because the buffer was full or the write failed. */
  dropped (): number
  /** Writes what is buffered (called on close, and by tests). */
  flush (): Promise<void>
  list (filter: AuditFilter): Promise<StoredAuditEvent[]>
  /**
   * Logins per hour from `since` (truncated to its hour) until now: one bucket per hour that has
   * any, oldest first; an hour without a Login is absent (the caller fills the gaps).
   */
  loginsPerHour (since: Date): Promise<HourlyLogins[]>
  close (): Promise<void>
}

/** The Logins of one hour (its start), successes and failures counted apart. */
export interface HourlyLogins {
  hour: Date
  successes: number
  failures: number
}

export interface SqlAuditLogOptions {
  /** Events buffered before new ones are dropped. */
  maxBuffered?: number
  /** Told once per drop burst (throttled by the caller's logger if needed). */
  onDrop?: (count: number, total: number, cause: unknown) => void
  /**
   * Webhook receivers: each event with a webhook type gets one outbox row per URL, written in the
   * same statement as its audit row (both or neither), for the delivery worker to send.
   */
  webhookUrls?: readonly string[]
  /** Told after a write that added outbox rows (the delivery worker sends them at once). */
  onWebhookRows?: () => void
}

const BATCH = 100
const USER_AGENT_MAX = 512
const HOUR_MS = 3_600_000

/**
 * The audit log on the user database's `auth_events` table. Events go into a
 * bounded in-memory buffer and are written in batches off the request path; when
 * the buffer is full or the database refuses, events are dropped and counted.
 */
export function createSqlAuditLog (db: Queryable, options: SqlAuditLogOptions = {}): AuditLog {
  const maxBuffered = options.maxBuffered ?? 10_000
  const webhookUrls = options.webhookUrls ?? []
  let buffer: Array<{ at: Date, event: AuditEvent }> = []
  let droppedCount = 0
  let writing: Promise<void> | undefined

  const drop = (count: number, cause: unknown): void => {
    droppedCount += count
    options.onDrop?.(count, droppedCount, cause)
  }

  async function writeBatch (batch: Array<{ at: Date, event: AuditEvent }>): Promise<void> {
    const values: unknown[] = []
    const rows = batch.map(({ at, event }, i) => {
      values.push(at.toISOString(), event.event, event.username ?? null, event.accountId ?? null,
        event.clientIp ?? null, event.userAgent?.slice(0, USER_AGENT_MAX) ?? null, event.outcome, event.credential ?? null, event.actor ?? null)
      const b = i * 9
      return `($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6}, $${b + 7}, $${b + 8}, $${b + 9})`
    })
    const insertEvents = `INSERT INTO auth_events (occurred_at, event, username, account_id, client_ip, user_agent, outcome, credential, actor) VALUES ${rows.join(', ')}`
    const outbox: string[] = []
    for (const { at, event } of webhookUrls.length === 0 ? [] : batch) {
      const message = webhookMessage(event, at)
      if (message === undefined) continue
      for (const url of webhookUrls) {
        values.push(message.id, url, message.type, message.body)
        const b = values.length - 4
        outbox.push(`($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4})`)
      }
    }
    // One statement is one transaction: the outbox rows exist exactly when their audit rows do.
    await db.query(outbox.length === 0
      ? insertEvents
      : `WITH events AS (${insertEvents}) INSERT INTO webhook_deliveries (event_id, url, type, payload) VALUES ${outbox.join(', ')}`, values)
    if (outbox.length > 0) options.onWebhookRows?.()
  }

  async function drain (): Promise<void> {
    while (buffer.length > 0) {
      const batch = buffer.slice(0, BATCH)
      buffer = buffer.slice(BATCH)
      try {
        await writeBatch(batch)
      } catch (error) {
        drop(batch.length, error)
      }
    }
  }

  const schedule = (): void => {
    writing ??= new Promise<void>((resolve) => { setImmediate(resolve) })
      .then(drain)
      .finally(() => { writing = undefined })
  }

  async function flush (): Promise<void> {
    while (writing !== undefined || buffer.length > 0) {
      if (writing === undefined) schedule()
      await writing
    }
  }

  return {
    record (event) {
      if (buffer.length >= maxBuffered) {
        drop(1, new Error('audit buffer full'))
        return
      }
      buffer.push({ at: new Date(), event })
      schedule()
    },
    dropped: () => droppedCount,
    flush,
    async list (filter) {
      const where: string[] = []
      const params: unknown[] = []
      if (filter.username !== undefined) { params.push(filter.username); where.push(`username = $${params.length}`) }
      if (filter.since !== undefined) { params.push(filter.since.toISOString()); where.push(`occurred_at >= $${params.length}`) }
      if (filter.event !== undefined) { params.push(filter.event); where.push(`event = $${params.length}`) }
      if (filter.after !== undefined) {
        params.push(filter.after.occurredAt.toISOString(), filter.after.id)
        where.push(`(occurred_at, id) > ($${params.length - 1}, $${params.length})`)
      }
      params.push(filter.limit ?? 1000)
      const { rows } = await db.query<{
        id: string,
        occurred_at: Date | string,
        event: AuditEventName,
        username: string | null,
        account_id: string | null,
        client_ip: string | null,
        user_agent: string | null,
        outcome: string,
        credential: string | null
        actor: string | null
      }>(`SELECT id::text AS id, occurred_at, event, username, account_id::text AS account_id, client_ip, user_agent, outcome, credential, actor FROM auth_events
          ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY occurred_at, id LIMIT $${params.length}`, params)
      return rows.map((row) => ({
        id: row.id,
        occurredAt: new Date(row.occurred_at),
        event: row.event,
        username: row.username ?? undefined,
        accountId: row.account_id ?? undefined,
        clientIp: row.client_ip ?? undefined,
        userAgent: row.user_agent ?? undefined,
        outcome: row.outcome,
        credential: row.credential ?? undefined,
        actor: row.actor ?? undefined
      }))
    },
    async loginsPerHour (since) {
      // Counted where the rows are (the by-time index bounds the scan), never fetched to count.
      const { rows } = await db.query<{ hour: Date | string, successes: string | number, failures: string | number }>(
        `SELECT date_trunc('hour', occurred_at) AS hour,
            count(*) FILTER (WHERE event = 'login.success') AS successes,
            count(*) FILTER (WHERE event = 'login.failure') AS failures
          FROM auth_events WHERE occurred_at >= $1 AND event IN ('login.success', 'login.failure')
          GROUP BY 1 ORDER BY 1`, [new Date(Math.floor(since.getTime() / HOUR_MS) * HOUR_MS).toISOString()])
      return rows.map((row) => ({ hour: new Date(row.hour), successes: Number(row.successes), failures: Number(row.failures) }))
    },
    close: flush
  }
}
