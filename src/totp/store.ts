import type { Queryable } from '../db/database.js'
import { databaseGuard } from '../db/guarded.js'

/** An account's TOTP factor as Postgres keeps it (sql/010-second-factor.sql): the secret only sealed. */
export interface TotpFactorRow {
  accountId: string
  sealed: string
  /** False between enrollment and its confirmation. */
  active: boolean
  /** The last time step whose code was accepted; null before any. */
  lastStep: number | null
}

/** One implementation for Postgres and PGlite, as the user store. */
export interface TotpStore {
  find (accountId: string): Promise<TotpFactorRow | null>
  /**
   * A new enrollment (inactive) with its recovery codes' hashes, replacing one that waits for
   * confirmation and its codes; false, and nothing changed, while a factor is active.
   */
  begin (accountId: string, sealed: string, recoveryHashes: readonly string[]): Promise<boolean>
  /** Activates the waiting factor, recording `step` as used; false when none waits or the step is not newer. */
  confirm (accountId: string, step: number): Promise<boolean>
  /**
   * Records `step` as the last used of the active factor, only if it is later than the last:
   * true once per step and account, whichever instance asks first (the replay refusal).
   */
  claimStep (accountId: string, step: number): Promise<boolean>
  /** Marks an unused recovery code used: the codes left, or undefined when it was no unused code of the account. */
  useRecoveryCode (accountId: string, codeHash: string): Promise<number | undefined>
  /** Stores the secret sealed again (with the current key, after a rotation). */
  reseal (accountId: string, sealed: string): Promise<void>
  /** Removes the factor (active or waiting) and its codes; true when there was one. */
  remove (accountId: string): Promise<boolean>
}

interface Row {
  account_id: string
  secret_sealed: string
  active: boolean
  last_step: string | number | null
}

export function createSqlTotpStore (db: Queryable, onError?: (error: unknown) => void): TotpStore {
  const guarded = databaseGuard(onError)
  const changed = async (sql: string, params: unknown[]): Promise<boolean> => (await db.query(sql, params)).rows.length > 0
  return {
    find: async (accountId) => await guarded(async () => {
      const { rows } = await db.query<Row>('SELECT account_id::text AS account_id, secret_sealed, active, last_step FROM totp_factors WHERE account_id = $1', [accountId])
      const row = rows[0]
      return row === undefined ? null : { accountId: row.account_id, sealed: row.secret_sealed, active: row.active, lastStep: row.last_step === null ? null : Number(row.last_step) }
    }),
    begin: async (accountId, sealed, recoveryHashes) => await guarded(async () => await changed(
      // One statement: the row, its old codes gone and the new ones in, or nothing while active.
      `WITH f AS (
         INSERT INTO totp_factors (account_id, secret_sealed) VALUES ($1, $2)
         ON CONFLICT (account_id) DO UPDATE SET secret_sealed = EXCLUDED.secret_sealed, created_at = now(), last_step = NULL, confirmed_at = NULL
         WHERE NOT totp_factors.active
         RETURNING account_id),
       d AS (DELETE FROM totp_recovery_codes WHERE account_id IN (SELECT account_id FROM f)),
       i AS (INSERT INTO totp_recovery_codes (account_id, code_hash) SELECT f.account_id, h FROM f, unnest($3::text[]) AS h)
       SELECT account_id FROM f`, [accountId, sealed, recoveryHashes])),
    confirm: async (accountId, step) => await guarded(async () => await changed(
      'UPDATE totp_factors SET active = true, confirmed_at = now(), last_step = $2 WHERE account_id = $1 AND NOT active AND (last_step IS NULL OR last_step < $2) RETURNING 1',
      [accountId, step])),
    claimStep: async (accountId, step) => await guarded(async () => await changed(
      'UPDATE totp_factors SET last_step = $2 WHERE account_id = $1 AND active AND (last_step IS NULL OR last_step < $2) RETURNING 1',
      [accountId, step])),
    useRecoveryCode: async (accountId, codeHash) => await guarded(async () => {
      const { rows } = await db.query<{ used: string | number, unused: string | number }>(
        `WITH u AS (UPDATE totp_recovery_codes SET used_at = now() WHERE account_id = $1 AND code_hash = $2 AND used_at IS NULL RETURNING 1)
         SELECT (SELECT count(*) FROM u) AS used, (SELECT count(*) FROM totp_recovery_codes WHERE account_id = $1 AND used_at IS NULL) AS unused`,
        [accountId, codeHash])
      const row = rows[0]
      // The count reads the snapshot from before the UPDATE: the code just used is still in it.
      return row === undefined || Number(row.used) === 0 ? undefined : Number(row.unused) - 1
    }),
    reseal: async (accountId, sealed) => {
      await guarded(async () => await db.query('UPDATE totp_factors SET secret_sealed = $2 WHERE account_id = $1', [accountId, sealed]))
    },
    remove: async (accountId) => await guarded(async () => await changed('DELETE FROM totp_factors WHERE account_id = $1 RETURNING 1', [accountId]))
  }
}
