import type { Queryable } from '../db/database.js'
import { deliveryListQuery } from '../db/delivery-list.js'

/** The webhook outbox (sql/011-webhooks.sql): what the delivery worker and the admin API need of it. */

export type DeliveryStatus = 'pending' | 'delivered' | 'failed'
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['pending', 'delivered', 'failed']

/** A row claimed for one attempt. */
export interface ClaimedDelivery {
  id: string
  eventId: string
  url: string
  payload: string
  /** Attempts so far, this one included. */
  attempts: number
}

export interface DeliveryView {
  id: string
  eventId: string
  type: string
  url: string
  status: DeliveryStatus
  attempts: number
  created: Date
  nextAttempt: Date | null
  deliveredAt: Date | null
  lastError: string | null
}

export interface WebhookOutbox {
  /**
   * Up to `limit` due rows of one URL, leased to this instance for `leaseMs`: FOR UPDATE SKIP
   * LOCKED, so instances claiming at once take different rows, and the lease keeps a row from
   * every other instance while this one sends it (a crashed instance's lease just runs out).
   */
  claim (url: string, limit: number, leaseMs: number): Promise<ClaimedDelivery[]>
  /** The receiver took these (one statement for a claimed batch). */
  delivered (ids: readonly string[]): Promise<void>
  /**
   * A failed attempt: tried again after `delayMs`, or marked failed once `windowMs` has passed
   * since the row's window started. Says which.
   */
  attemptFailed (id: string, error: string, delayMs: number, windowMs: number): Promise<DeliveryStatus>
  list (filter: { status?: DeliveryStatus | undefined, afterId?: string | undefined, limit: number }): Promise<DeliveryView[]>
  /** A failed (or pending) row due now, with a fresh retry window; false when there is no such row (or it was delivered). */
  retry (id: string): Promise<boolean>
  counts (): Promise<Record<DeliveryStatus, number>>
  /** Removes delivered rows older than `olderThanMs`; how many. */
  prune (olderThanMs: number): Promise<number>
}

const ERROR_MAX = 300

interface DeliveryRow {
  id: string
  event_id: string
  type: string
  url: string
  status: DeliveryStatus
  attempts: number
  created_at: Date | string
  next_attempt_at: Date | string
  delivered_at: Date | string | null
  last_error: string | null
}

const date = (value: Date | string | null): Date | null => value === null ? null : new Date(value)

export function createSqlWebhookOutbox (db: Queryable): WebhookOutbox {
  return {
    async claim (url, limit, leaseMs) {
      const { rows } = await db.query<{ id: string, event_id: string, url: string, payload: string, attempts: number }>(
        `UPDATE webhook_deliveries SET leased_until = now() + make_interval(secs => $3::double precision / 1000), attempts = attempts + 1
          WHERE id IN (
            SELECT id FROM webhook_deliveries
             WHERE url = $1 AND status = 'pending' AND next_attempt_at <= now() AND (leased_until IS NULL OR leased_until < now())
             ORDER BY next_attempt_at, id LIMIT $2
             FOR UPDATE SKIP LOCKED)
          RETURNING id::text AS id, event_id, url, payload, attempts`, [url, limit, leaseMs])
      return rows.map((row) => ({ id: row.id, eventId: row.event_id, url: row.url, payload: row.payload, attempts: row.attempts }))
    },
    async delivered (ids) {
      await db.query("UPDATE webhook_deliveries SET status = 'delivered', delivered_at = now(), leased_until = NULL, last_error = NULL WHERE id = ANY($1::bigint[]) AND status = 'pending'", [ids])
    },
    async attemptFailed (id, error, delayMs, windowMs) {
      const { rows } = await db.query<{ status: DeliveryStatus }>(
        `UPDATE webhook_deliveries
            SET status = CASE WHEN now() - window_start >= make_interval(secs => $4::double precision / 1000) THEN 'failed' ELSE 'pending' END,
                next_attempt_at = now() + make_interval(secs => $3::double precision / 1000),
                leased_until = NULL, last_error = $2
          WHERE id = $1 AND status = 'pending' RETURNING status`, [id, error.slice(0, ERROR_MAX), delayMs, windowMs])
      return rows[0]?.status ?? 'pending'
    },
    async list (filter) {
      const { where, limit, params } = deliveryListQuery(filter)
      const { rows } = await db.query<DeliveryRow>(
        `SELECT id::text AS id, event_id, type, url, status, attempts, created_at, next_attempt_at, delivered_at, last_error FROM webhook_deliveries
          ${where} ORDER BY id LIMIT ${limit}`, params)
      return rows.map((row) => ({
        id: row.id,
        eventId: row.event_id,
        type: row.type,
        url: row.url,
        status: row.status,
        attempts: row.attempts,
        created: new Date(row.created_at),
        nextAttempt: row.status === 'pending' ? date(row.next_attempt_at) : null,
        deliveredAt: date(row.delivered_at),
        lastError: row.last_error
      }))
    },
    async retry (id) {
      const { rows } = await db.query<{ id: string }>(
        `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), window_start = now(), leased_until = NULL
          WHERE id = $1 AND status IN ('failed', 'pending') RETURNING id::text AS id`, [id])
      return rows.length > 0
    },
    async counts () {
      const { rows } = await db.query<{ status: DeliveryStatus, n: number }>(
        "SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE status IN ('pending', 'failed') GROUP BY status")
      const counts: Record<DeliveryStatus, number> = { pending: 0, delivered: 0, failed: 0 }
      for (const row of rows) counts[row.status] = row.n
      return counts
    },
    async prune (olderThanMs) {
      const { rows } = await db.query<{ id: string }>(
        "DELETE FROM webhook_deliveries WHERE status = 'delivered' AND delivered_at < now() - make_interval(secs => $1::double precision / 1000) RETURNING id::text AS id", [olderThanMs])
      return rows.length
    }
  }
}
