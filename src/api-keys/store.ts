import type { Database } from '../db/database.js'
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
  /** The account's groups now (joined), for the key's record, and their version (core/groups.ts). */
  groups: readonly string[]
  groupsVersion: number
}

export interface NewApiKey {
  id: string
  accountId: string
  name: string
  keyHash: string
  expiresAt: Date
}

/** What create made: the key, or why none ('disabled': the account is gone or disabled; 'full': it holds `maxLive` live keys). */
export type CreatedKeyRow = { ok: true, row: ApiKeyRow } | { ok: false, refused: 'disabled' | 'full' }

/** One implementation for Postgres and PGlite, as the user store. */
export interface ApiKeyStore {
  /**
   * Stores a key of an enabled account holding fewer than `maxLive` live keys. The account row is
   * locked (FOR NO KEY UPDATE) in a transaction before the live keys are counted: concurrent
   * creates for one account count one after the other, and a disable running beside it either
   * waits for this key (and then ends it) or has committed first (and no key is made).
   */
  create (key: NewApiKey, maxLive: number): Promise<CreatedKeyRow>
  /**
   * A page of the account's keys neither ended nor expired, oldest first: at most `limit`, after
   * the key `afterId` when given (an id of another account's key, or none: an empty page).
   */
  pageLive (accountId: string, afterId: string | undefined, limit: number): Promise<ApiKeyRow[]>
  find (id: string): Promise<ApiKeyRow | null>
  /** Marks a live key ended; returns it, or null when it was not live (unknown, ended, expired). */
  end (id: string): Promise<ApiKeyRow | null>
  /**
   * Marks every live key of the account ended, in one UPDATE, and returns them (`ended`), with the
   * keys of the account ended within `recentMs` before that are not expired yet (`endedBefore`):
   * a revoke-all that failed after Postgres and before the token store said so (503) is finished
   * by the next one, which ends those keys' records again.
   */
  endAccount (accountId: string, recentMs: number): Promise<{ ended: ApiKeyRow[], endedBefore: ApiKeyRow[] }>
  /** The live key with this hash whose account is enabled (what a lost Redis record is re-seeded from), or null. */
  liveByHash (keyHash: string): Promise<ApiKeyRow | null>
  /** The hashes of the account's live keys (their records carry its groups). */
  liveHashes (accountId: string): Promise<string[]>
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
  groups: string[] | null
  groups_version: string | number | bigint
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
  endedAt: row.ended_at === null ? null : new Date(row.ended_at),
  groups: row.groups ?? [],
  groupsVersion: Number(row.groups_version)
})

const COLUMNS = `k.id, k.account_id::text AS account_id, u.username, k.name, k.key_hash, k.created_at, k.expires_at, k.last_used_at, k.ended_at,
  u.groups_version, ARRAY(SELECT DISTINCT g.name COLLATE "C" FROM account_groups g WHERE g.account_id = u.id ORDER BY 1) AS groups`
const LIVE = 'k.ended_at IS NULL AND k.expires_at > now()'
/** The most keys ended before that a revoke-all ends again (the latest): a bound on one step's work. */
const ENDED_AGAIN_MAX = 1000

export function createSqlApiKeyStore (db: Pick<Database, 'query' | 'transaction'>, onError?: (error: unknown) => void): ApiKeyStore {
  const guarded = databaseGuard(onError)
  const rows = async (sql: string, params: unknown[]): Promise<ApiKeyRow[]> => (await db.query<Row>(sql, params)).rows.map(toRow)
  const first = async (sql: string, params: unknown[]): Promise<ApiKeyRow | null> => (await rows(sql, params))[0] ?? null
  /** An UPDATE of api_keys, returned with its account's username. */
  const ending = (where: string): string =>
    `WITH k AS (UPDATE api_keys k SET ended_at = now() WHERE ${where} AND ${LIVE} RETURNING k.*) SELECT ${COLUMNS} FROM k JOIN users u ON u.id = k.account_id`

  return {
    // Two statements in one transaction, not one: a statement's snapshot is taken before it waits
    // for the row lock, so a count in the same statement as the lock misses a key a concurrent
    // create committed meanwhile (the cap was exceeded that way); the count and insert that follow
    // the lock read a snapshot taken after it.
    create: async (key, maxLive) => await guarded(async () => await db.transaction(async (tx): Promise<CreatedKeyRow> => {
      const { rows: account } = await tx.query('SELECT id FROM users WHERE id = $1 AND NOT disabled FOR NO KEY UPDATE', [key.accountId])
      if (account.length === 0) return { ok: false, refused: 'disabled' }
      const { rows: made } = await tx.query<Row>(
        `WITH k AS (INSERT INTO api_keys (id, account_id, name, key_hash, expires_at)
                    SELECT $1, $2, $3, $4, $5 WHERE (SELECT count(*) FROM api_keys k WHERE k.account_id = $2 AND ${LIVE}) < $6 RETURNING *)
         SELECT ${COLUMNS} FROM k JOIN users u ON u.id = k.account_id`,
        [key.id, key.accountId, key.name, key.keyHash, key.expiresAt.toISOString(), maxLive])
      const row = made[0]
      return row === undefined ? { ok: false, refused: 'full' } : { ok: true, row: toRow(row) }
    })),
    pageLive: async (accountId, afterId, limit) => await guarded(async () => await rows(
      `SELECT ${COLUMNS} FROM api_keys k JOIN users u ON u.id = k.account_id WHERE k.account_id = $1 AND ${LIVE}
         AND ($2::text IS NULL OR (k.created_at, k.id) > (SELECT a.created_at, a.id FROM api_keys a WHERE a.id = $2 AND a.account_id = $1))
       ORDER BY k.created_at, k.id LIMIT $3`, [accountId, afterId ?? null, limit])),
    find: async (id) => await guarded(async () => await first(
      `SELECT ${COLUMNS} FROM api_keys k JOIN users u ON u.id = k.account_id WHERE k.id = $1`, [id])),
    end: async (id) => await guarded(async () => await first(ending('k.id = $1'), [id])),
    endAccount: async (accountId, recentMs) => await guarded(async () => {
      // One statement: the UPDATE's own rows and the keys ended shortly before it (a data-modifying
      // CTE's rows are not visible to the rest of the statement, so the two sets do not overlap).
      const found = await db.query<Row & { ended_now: boolean }>(
        `WITH e AS (UPDATE api_keys k SET ended_at = now() WHERE k.account_id = $1 AND ${LIVE} RETURNING k.*),
              k AS (SELECT e.*, true AS ended_now FROM e
                    UNION ALL
                    (SELECT k.*, false FROM api_keys k WHERE k.account_id = $1 AND k.ended_at IS NOT NULL
                       AND k.ended_at > now() - ($2::bigint * interval '1 millisecond') AND k.expires_at > now()
                     ORDER BY k.ended_at DESC LIMIT ${ENDED_AGAIN_MAX}))
         SELECT ${COLUMNS}, k.ended_now FROM k JOIN users u ON u.id = k.account_id`, [accountId, recentMs])
      return {
        ended: found.rows.filter((row) => row.ended_now).map(toRow),
        endedBefore: found.rows.filter((row) => !row.ended_now).map(toRow)
      }
    }),
    liveHashes: async (accountId) => await guarded(async () => {
      const { rows: found } = await db.query<{ key_hash: string }>(`SELECT k.key_hash FROM api_keys k WHERE k.account_id = $1 AND ${LIVE}`, [accountId])
      return found.map((row) => row.key_hash)
    }),
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
