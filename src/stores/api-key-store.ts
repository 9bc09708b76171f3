import type { Queryable } from '../db/database.js'
import { databaseGuard } from '../db/guarded.js'

/** An API key as Postgres keeps it (sql/009-machine-credentials.sql): never its secret, only its hash. */
export interface ApiKeyRow {
  id: string
  accountId: string
  /** The account's username now (joined), for records and audit events. */
  username: string
  name: string
  keyHash: string
  createdAt: Date
  expiresAt: Date
  lastUsedAt: Date | null
  endedAt: Date | null
}

export interface NewApiKey {
  id: string
  accountId: string
  name: string
  keyHash: string
  expiresAt: Date
}

/** One implementation for Postgres and PGlite, as the user store. */
export interface ApiKeyStore {
  /**
   * Stores a key of an enabled account; null when the account is gone or disabled. The account
   * row is locked FOR SHARE: a disable running beside it either waits for this key (and then ends
   * it) or has committed first (and no key is made).
   */
  create (key: NewApiKey): Promise<ApiKeyRow | null>
  /** The account's keys neither ended nor expired, oldest first. */
  listLive (accountId: string): Promise<ApiKeyRow[]>
  find (id: string): Promise<ApiKeyRow | null>
  /** Marks a live key ended; returns it, or null when it was not live (unknown, ended, expired). */
  end (id: string): Promise<ApiKeyRow | null>
  /** Marks every live key of the account ended; returns them. */
  endAccount (accountId: string): Promise<ApiKeyRow[]>
  /** The live key with this hash whose account is enabled (what a lost Redis record is re-seeded from), or null. */
  liveByHash (keyHash: string): Promise<ApiKeyRow | null>
  /** Records a use of each key at `at` (coarse: last_used). */
  touch (ids: readonly string[], at: Date): Promise<void>
  /** Live keys expiring within `withinMs` from now. */
  countExpiring (withinMs: number): Promise<number>
}

interface Row {
  id: string
  account_id: string | number | bigint
  username: string
  name: string
  key_hash: string
  created_at: Date | string
  expires_at: Date | string
  last_used_at: Date | string | null
  ended_at: Date | string | null
}

const toRow = (row: Row): ApiKeyRow => ({
  id: row.id,
  accountId: String(row.account_id),
  username: row.username,
  name: row.name,
  keyHash: row.key_hash,
  createdAt: new Date(row.created_at),
  expiresAt: new Date(row.expires_at),
  lastUsedAt: row.last_used_at === null ? null : new Date(row.last_used_at),
  endedAt: row.ended_at === null ? null : new Date(row.ended_at)
})

const COLUMNS = 'k.id, k.account_id::text AS account_id, u.username, k.name, k.key_hash, k.created_at, k.expires_at, k.last_used_at, k.ended_at'
const LIVE = 'k.ended_at IS NULL AND k.expires_at > now()'

export function createSqlApiKeyStore (db: Queryable, onError?: (error: unknown) => void): ApiKeyStore {
  const guarded = databaseGuard(onError)
  const rows = async (sql: string, params: unknown[]): Promise<ApiKeyRow[]> => (await db.query<Row>(sql, params)).rows.map(toRow)
  const first = async (sql: string, params: unknown[]): Promise<ApiKeyRow | null> => (await rows(sql, params))[0] ?? null
  /** An UPDATE of api_keys, returned with its account's username. */
  const ending = (where: string): string =>
    `WITH k AS (UPDATE api_keys k SET ended_at = now() WHERE ${where} AND ${LIVE} RETURNING k.*) SELECT ${COLUMNS} FROM k JOIN users u ON u.id = k.account_id`

  return {
    create: async (key) => await guarded(async () => await first(
      `WITH u AS (SELECT id, username FROM users WHERE id = $2 AND NOT disabled FOR SHARE),
            k AS (INSERT INTO api_keys (id, account_id, name, key_hash, expires_at) SELECT $1, u.id, $3, $4, $5 FROM u RETURNING *)
       SELECT ${COLUMNS} FROM k JOIN u ON u.id = k.account_id`,
      [key.id, key.accountId, key.name, key.keyHash, key.expiresAt.toISOString()])),
    listLive: async (accountId) => await guarded(async () => await rows(
      `SELECT ${COLUMNS} FROM api_keys k JOIN users u ON u.id = k.account_id WHERE k.account_id = $1 AND ${LIVE} ORDER BY k.created_at, k.id`, [accountId])),
    find: async (id) => await guarded(async () => await first(
      `SELECT ${COLUMNS} FROM api_keys k JOIN users u ON u.id = k.account_id WHERE k.id = $1`, [id])),
    end: async (id) => await guarded(async () => await first(ending('k.id = $1'), [id])),
    endAccount: async (accountId) => await guarded(async () => await rows(ending('k.account_id = $1'), [accountId])),
    liveByHash: async (keyHash) => await guarded(async () => await first(
      `SELECT ${COLUMNS} FROM api_keys k JOIN users u ON u.id = k.account_id WHERE k.key_hash = $1 AND ${LIVE} AND NOT u.disabled`, [keyHash])),
    touch: async (ids, at) => {
      if (ids.length === 0) return
      await guarded(async () => await db.query('UPDATE api_keys SET last_used_at = $2 WHERE id = ANY($1::text[]) AND (last_used_at IS NULL OR last_used_at < $2)', [ids, at.toISOString()]))
    },
    countExpiring: async (withinMs) => await guarded(async () => {
      const { rows: found } = await db.query<{ n: string | number }>(
        `SELECT count(*) AS n FROM api_keys k WHERE ${LIVE} AND k.expires_at <= now() + ($1::bigint * interval '1 millisecond')`, [withinMs])
      return Number(found[0]?.n ?? 0)
    })
  }
}
