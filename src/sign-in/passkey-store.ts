import type { Queryable } from '../db/database.js'
import { databaseGuard } from '../db/guarded.js'

/** A passkey as Postgres keeps it (sql/012-passkeys.sql): the public key, never anything that signs. */
export interface PasskeyRow {
  /** The credential id, base64url. */
  id: string
  accountId: string
  /** The account's username now (joined). */
  username: string
  /** COSE public key, base64url. */
  publicKey: string
  counter: number
  transports: string[]
  name: string
  createdAt: Date
  lastUsedAt: Date | null
}

export interface NewPasskey {
  id: string
  accountId: string
  publicKey: string
  counter: number
  transports: readonly string[]
  name: string
}

/** One implementation for Postgres and PGlite, as the user store. */
export interface PasskeyStore {
  /** False when the credential id is already registered (to anyone). */
  create (passkey: NewPasskey): Promise<boolean>
  find (id: string): Promise<PasskeyRow | null>
  listByAccount (accountId: string): Promise<PasskeyRow[]>
  /** Records a use and the authenticator's new signature counter. */
  used (id: string, counter: number): Promise<void>
  /** Removes one of the account's passkeys; false when it has none of that id. */
  remove (accountId: string, id: string): Promise<boolean>
}

interface Row {
  id: string
  account_id: string
  username: string
  public_key: string
  counter: string | number
  transports: string
  name: string
  created_at: Date | string
  last_used_at: Date | string | null
}

const toRow = (row: Row): PasskeyRow => ({
  id: row.id,
  accountId: row.account_id,
  username: row.username,
  publicKey: row.public_key,
  counter: Number(row.counter),
  transports: row.transports === '' ? [] : row.transports.split(','),
  name: row.name,
  createdAt: new Date(row.created_at),
  lastUsedAt: row.last_used_at === null ? null : new Date(row.last_used_at)
})

const COLUMNS = 'p.id, p.account_id::text AS account_id, u.username, p.public_key, p.counter, p.transports, p.name, p.created_at, p.last_used_at'
const JOINED = 'passkeys p JOIN users u ON u.id = p.account_id'

export function createSqlPasskeyStore (db: Queryable, onError?: (error: unknown) => void): PasskeyStore {
  const guarded = databaseGuard(onError)
  return {
    create: async (passkey) => await guarded(async () => {
      const { rows } = await db.query(
        'INSERT INTO passkeys (id, account_id, public_key, counter, transports, name) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING RETURNING id',
        [passkey.id, passkey.accountId, passkey.publicKey, passkey.counter, passkey.transports.join(','), passkey.name])
      return rows.length === 1
    }),
    find: async (id) => await guarded(async () => {
      const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM ${JOINED} WHERE p.id = $1`, [id])
      return rows[0] === undefined ? null : toRow(rows[0])
    }),
    listByAccount: async (accountId) => await guarded(async () => {
      const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM ${JOINED} WHERE p.account_id = $1 ORDER BY p.created_at, p.id`, [accountId])
      return rows.map(toRow)
    }),
    used: async (id, counter) => {
      await guarded(async () => await db.query('UPDATE passkeys SET counter = $2, last_used_at = now() WHERE id = $1', [id, counter]))
    },
    remove: async (accountId, id) => await guarded(async () => {
      const { rows } = await db.query('DELETE FROM passkeys WHERE account_id = $1 AND id = $2 RETURNING id', [accountId, id])
      return rows.length === 1
    })
  }
}
