import type { Queryable } from '../db/database.js'
import { deliveryListQuery } from '../db/delivery-list.js'
import { databaseGuard } from '../db/guarded.js'

/** The links and the mail outbox (sql/017-mail-recovery.sql): what recovery, its worker and the admin API need of them. */

export type LinkKind = 'reset' | 'invite'
export type MailStatus = 'pending' | 'delivered' | 'failed'
export const MAIL_STATUSES: readonly MailStatus[] = ['pending', 'delivered', 'failed']

/** An account a reset request may match. */
export interface Recipient {
  id: string
  username: string
  kind: 'person' | 'service'
  federated: boolean
  disabled: boolean
  email: string | null
}

/** A link found by its secret's hash, with its account as it is now. */
export interface FoundLink {
  id: string
  kind: LinkKind
  accountId: string
  username: string
  /** Neither used, nor voided, nor expired. */
  usable: boolean
  /** The account may still set its password this way: a person's local account, not disabled. */
  eligible: boolean
  totp: boolean
}

export interface NewLink {
  accountId: string
  kind: LinkKind
  secretHash: string
  ttlMs: number
  recipient: string
  username: string
  /** The link's secret sealed for the outbox (wiped when the mail is delivered or cannot be). */
  sealedSecret: string
}

/** A mail claimed for one attempt. */
export interface ClaimedMail {
  id: string
  kind: LinkKind
  accountId: string
  recipient: string
  username: string
  sealedSecret: string | null
  expiresAt: Date
  /** The link is still neither used, voided nor expired. */
  usable: boolean
  /** Attempts so far, this one included. */
  attempts: number
}

export interface MailView {
  id: string
  kind: LinkKind
  username: string
  recipient: string
  status: MailStatus
  attempts: number
  created: Date
  nextAttempt: Date | null
  deliveredAt: Date | null
  lastError: string | null
}

export interface RecoveryStore {
  /** Accounts named by `username`, or whose address is `email` (case-insensitively), at most `limit`. */
  recipients (username: string | undefined, email: string | undefined, limit: number): Promise<Recipient[]>
  /**
   * A new link and its mail, in one statement: the account's older links are voided with it, and
   * their mail not yet sent is withdrawn (failed, its sealed secret wiped). Returns the mail's id.
   */
  issue (link: NewLink): Promise<string>
  findLink (secretHash: string): Promise<FoundLink | undefined>
  /** Marks the link used if it still is usable: true for exactly one caller. The account's other links are voided. */
  consume (linkId: string): Promise<boolean>
  /** Voids every open link of the account, their unsent mail withdrawn (failed, its sealed secret wiped). */
  voidLinks (accountId: string, reason: string): Promise<void>
}

export interface MailOutbox {
  /** Up to `limit` due mails, leased for `leaseMs` (FOR UPDATE SKIP LOCKED, as the webhook outbox). */
  claim (limit: number, leaseMs: number): Promise<ClaimedMail[]>
  /** Sent: its sealed secret is wiped. */
  delivered (id: string): Promise<void>
  /** A failed attempt: tried again after `delayMs` while its link is usable then, else failed (and wiped). */
  attemptFailed (id: string, error: string, delayMs: number): Promise<MailStatus>
  /** Cannot be sent at all (its link is gone, its secret does not open): failed and wiped. */
  giveUp (id: string, error: string): Promise<void>
  list (filter: { status?: MailStatus | undefined, afterId?: string | undefined, limit: number }): Promise<MailView[]>
  /** A pending or failed mail whose link is still usable, due now; false when there is none. */
  retry (id: string): Promise<boolean>
  /** Wipes the sealed secrets of mail whose link can no longer be used; removes delivered and failed rows, and links expired, older than `olderThanMs`. */
  prune (olderThanMs: number): Promise<void>
}

const ERROR_MAX = 300
const date = (value: Date | string | null): Date | null => value === null ? null : new Date(value)

/** A link that can still set a password: not used, voided or expired, and made since the account's tokens were last ended (sql/017). */
const USABLE = 'l.used_at IS NULL AND l.voided_at IS NULL AND l.expires_at > now() AND l.token_epoch = (SELECT e.token_epoch FROM users e WHERE e.id = l.account_id)'

export function createSqlRecoveryStore (db: Queryable, onError?: (error: unknown) => void): RecoveryStore {
  const guarded = databaseGuard(onError)
  return {
    recipients: async (username, email, limit) => await guarded(async () => {
      const { rows } = await db.query<{ id: string, username: string, kind: string, federated: boolean, disabled: boolean, email: string | null }>(
        `SELECT id::text AS id, username, kind, federated, disabled, email FROM users
          WHERE ($1::text IS NOT NULL AND username = $1) OR ($2::text IS NOT NULL AND email IS NOT NULL AND lower(email) = lower($2))
          ORDER BY id LIMIT $3`, [username ?? null, email ?? null, limit])
      return rows.map((row) => ({ ...row, kind: row.kind === 'service' ? 'service' : 'person' }))
    }),
    issue: async (link) => await guarded(async () => {
      const { rows } = await db.query<{ id: string }>(
        `WITH voided AS (
           UPDATE reset_links SET voided_at = now() WHERE account_id = $1 AND used_at IS NULL AND voided_at IS NULL RETURNING id
         ), withdrawn AS (
           UPDATE mail_deliveries SET status = 'failed', sealed_secret = NULL, leased_until = NULL, last_error = 'superseded by a newer link'
            WHERE status = 'pending' AND link_id IN (SELECT id FROM voided) RETURNING id
         ), link AS (
           INSERT INTO reset_links (account_id, kind, secret_hash, expires_at, token_epoch)
           SELECT $1, $2, $3, now() + make_interval(secs => $4::double precision / 1000), token_epoch FROM users WHERE id = $1 RETURNING id
         )
         INSERT INTO mail_deliveries (link_id, kind, recipient, username, sealed_secret)
         SELECT id, $2, $5, $6, $7 FROM link RETURNING id::text AS id`,
        [link.accountId, link.kind, link.secretHash, link.ttlMs, link.recipient, link.username, link.sealedSecret])
      const id = rows[0]?.id
      if (id === undefined) throw new Error('the mail outbox row was not written')
      return id
    }),
    findLink: async (secretHash) => await guarded(async () => {
      const { rows } = await db.query<{ id: string, kind: LinkKind, account_id: string, username: string, usable: boolean, eligible: boolean, totp: boolean }>(
        `SELECT l.id::text AS id, l.kind, l.account_id::text AS account_id, u.username, (${USABLE}) AS usable,
                (u.kind = 'person' AND NOT u.federated AND NOT u.disabled) AS eligible,
                EXISTS (SELECT 1 FROM totp_factors f WHERE f.account_id = u.id AND f.active) AS totp
           FROM reset_links l JOIN users u ON u.id = l.account_id WHERE l.secret_hash = $1`, [secretHash])
      const row = rows[0]
      return row === undefined ? undefined : { id: row.id, kind: row.kind, accountId: row.account_id, username: row.username, usable: row.usable, eligible: row.eligible, totp: row.totp }
    }),
    voidLinks: async (accountId, reason) => {
      await guarded(async () => await db.query(
        `WITH voided AS (
           UPDATE reset_links SET voided_at = now() WHERE account_id = $1 AND used_at IS NULL AND voided_at IS NULL RETURNING id
         )
         UPDATE mail_deliveries SET status = 'failed', sealed_secret = NULL, leased_until = NULL, last_error = $2
          WHERE status = 'pending' AND link_id IN (SELECT id FROM voided)`, [accountId, reason]))
    },
    consume: async (linkId) => await guarded(async () => {
      const { rows } = await db.query<{ id: string }>(
        `WITH used AS (
           UPDATE reset_links l SET used_at = now() WHERE l.id = $1 AND ${USABLE} RETURNING l.id, l.account_id
         ), others AS (
           UPDATE reset_links SET voided_at = now() WHERE account_id IN (SELECT account_id FROM used) AND id <> $1 AND used_at IS NULL AND voided_at IS NULL RETURNING id
         )
         SELECT id::text AS id FROM used`, [linkId])
      return rows.length > 0
    })
  }
}

interface MailRow {
  id: string
  kind: LinkKind
  username: string
  recipient: string
  status: MailStatus
  attempts: number
  created_at: Date | string
  next_attempt_at: Date | string
  delivered_at: Date | string | null
  last_error: string | null
}

export function createSqlMailOutbox (db: Queryable): MailOutbox {
  return {
    async claim (limit, leaseMs) {
      const { rows } = await db.query<{ id: string, kind: LinkKind, account_id: string, recipient: string, username: string, sealed_secret: string | null, expires_at: Date | string, usable: boolean, attempts: number }>(
        `WITH claimed AS (
           UPDATE mail_deliveries SET leased_until = now() + make_interval(secs => $2::double precision / 1000), attempts = attempts + 1
            WHERE id IN (
              SELECT id FROM mail_deliveries
               WHERE status = 'pending' AND next_attempt_at <= now() AND (leased_until IS NULL OR leased_until < now())
               ORDER BY next_attempt_at, id LIMIT $1
               FOR UPDATE SKIP LOCKED)
           RETURNING id, link_id, kind, recipient, username, sealed_secret, attempts
         )
         SELECT c.id::text AS id, c.kind, l.account_id::text AS account_id, c.recipient, c.username, c.sealed_secret, l.expires_at, (${USABLE}) AS usable, c.attempts
           FROM claimed c JOIN reset_links l ON l.id = c.link_id`, [limit, leaseMs])
      return rows.map((row) => ({
        id: row.id,
        kind: row.kind,
        accountId: row.account_id,
        recipient: row.recipient,
        username: row.username,
        sealedSecret: row.sealed_secret,
        expiresAt: new Date(row.expires_at),
        usable: row.usable,
        attempts: row.attempts
      }))
    },
    async delivered (id) {
      await db.query("UPDATE mail_deliveries SET status = 'delivered', delivered_at = now(), sealed_secret = NULL, leased_until = NULL, last_error = NULL WHERE id = $1 AND status = 'pending'", [id])
    },
    async attemptFailed (id, error, delayMs) {
      const { rows } = await db.query<{ status: MailStatus }>(
        `WITH verdict AS (
           SELECT d.id, NOT (l.used_at IS NULL AND l.voided_at IS NULL AND l.expires_at > now() + make_interval(secs => $3::double precision / 1000)) AS gone
             FROM mail_deliveries d JOIN reset_links l ON l.id = d.link_id WHERE d.id = $1
         )
         UPDATE mail_deliveries d
            SET status = CASE WHEN v.gone THEN 'failed' ELSE 'pending' END,
                sealed_secret = CASE WHEN v.gone THEN NULL ELSE d.sealed_secret END,
                next_attempt_at = now() + make_interval(secs => $3::double precision / 1000),
                leased_until = NULL, last_error = $2
           FROM verdict v WHERE d.id = v.id AND d.status = 'pending' RETURNING d.status`, [id, error.slice(0, ERROR_MAX), delayMs])
      return rows[0]?.status ?? 'pending'
    },
    async giveUp (id, error) {
      await db.query("UPDATE mail_deliveries SET status = 'failed', sealed_secret = NULL, leased_until = NULL, last_error = $2 WHERE id = $1 AND status = 'pending'", [id, error.slice(0, ERROR_MAX)])
    },
    async list (filter) {
      const { where, limit, params } = deliveryListQuery(filter)
      const { rows } = await db.query<MailRow>(
        `SELECT id::text AS id, kind, username, recipient, status, attempts, created_at, next_attempt_at, delivered_at, last_error FROM mail_deliveries
          ${where} ORDER BY id LIMIT ${limit}`, params)
      return rows.map((row) => ({
        id: row.id,
        kind: row.kind,
        username: row.username,
        recipient: row.recipient,
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
        `UPDATE mail_deliveries d SET status = 'pending', next_attempt_at = now(), leased_until = NULL
           FROM reset_links l
          WHERE d.id = $1 AND l.id = d.link_id AND d.status IN ('failed', 'pending') AND d.sealed_secret IS NOT NULL AND ${USABLE}
          RETURNING d.id::text AS id`, [id])
      return rows.length > 0
    },
    async prune (olderThanMs) {
      await db.query(
        `UPDATE mail_deliveries d SET sealed_secret = NULL FROM reset_links l
          WHERE l.id = d.link_id AND d.sealed_secret IS NOT NULL AND NOT (${USABLE})`)
      await db.query(
        "DELETE FROM mail_deliveries WHERE status IN ('delivered', 'failed') AND created_at < now() - make_interval(secs => $1::double precision / 1000)", [olderThanMs])
      // Links long past their expiry mean nothing any more (their mail rows go with them).
      await db.query('DELETE FROM reset_links WHERE expires_at < now() - make_interval(secs => $1::double precision / 1000)', [olderThanMs])
    }
  }
}
