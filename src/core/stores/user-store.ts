import { StatusError, serviceUnavailable } from '../../errors/status.js'
import type { Queryable } from '../../db/database.js'
import { databaseGuard } from '../../db/guarded.js'

/** A person logs in; a service has no password and authenticates with API keys only. */
export type AccountKind = 'person' | 'service'

export interface UserRecord {
  id: string
  username: string
  kind: AccountKind
  /** argon2id PHC string; null for a federated account that only the directory can check. */
  passwordHash: string | null
  federated: boolean
  disabled: boolean
  /**
   * The revocation epoch: one more at every disable, password change and revoke-all, in the
   * same UPDATE. Read before a Login checks the password, it tells the token store whether a
   * revocation overtook the Login (core/stores/token-store.ts).
   */
  tokenEpoch: number
  /** Every group the account is in, local and directory alike (sorted, each once): what its tokens carry. */
  groups: readonly string[]
  /**
   * One more at every change of the account's groups, in the same statement: a token written
   * with an older set than one a change already pushed is written with that change's set instead.
   */
  groupsVersion: number
  /**
   * Whether the account had an active second factor when it was read: set by `findByUsername`
   * (Login's read), absent from the other reads. Login asks for a code only when this is not
   * false (totp/second-factor.ts), so an account without one costs Login no second read.
   */
  secondFactor?: boolean
}

/** An account as the administration shows it: the record and when it was made and last used. */
export interface AccountDetails extends UserRecord {
  createdAt: Date
  /** The last successful Login; null when it never logged in (since the column exists). */
  lastLoginAt: Date | null
  /** It has an active second factor (TOTP). */
  totp: boolean
  /** Of its groups, those its directory named at its last Login (a federated account's). */
  directoryGroups: readonly string[]
  /** Where its recovery and invitation mail goes; null: none. */
  email: string | null
}

export interface NewUser {
  username: string
  passwordHash: string | null
  federated: boolean
  /** Default 'person'. A service account has no password hash and is not federated. */
  kind?: AccountKind
}

/** Usernames reach the store already NFC-normalized; the store compares exactly. */
export interface UserStore {
  findByUsername (username: string): Promise<UserRecord | null>
  /** The account with this id (an OpenID Connect subject), or null; an id that is no number is none. */
  findById (id: string): Promise<UserRecord | null>
  /** Fails with `duplicateUsername()` when the name is taken. */
  create (user: NewUser): Promise<UserRecord>
  /** A new password: the epoch goes up with it. Returns the updated account, or null when there is none. */
  setPasswordHash (username: string, passwordHash: string): Promise<UserRecord | null>
  /**
   * The same password, rehashed at the current policy: the epoch stays (the account's tokens
   * stay), and nothing changes unless the stored hash is still `previousHash` (a password
   * changed meanwhile is never overwritten by the old one).
   */
  upgradePasswordHash (username: string, previousHash: string, passwordHash: string): Promise<void>
  /** Disabling raises the epoch; enabling leaves it. */
  setDisabled (username: string, disabled: boolean): Promise<UserRecord | null>
  /** Raises the epoch alone (revoke-all). Returns the updated account, or null when there is none. */
  raiseTokenEpoch (username: string): Promise<UserRecord | null>
  list (): Promise<UserRecord[]>
  /**
   * Up to `limit` accounts whose usernames sort after `after` (keyset pagination), in username
   * order; with `prefix`, only those whose usernames begin with it.
   */
  page (after: string | undefined, limit: number, prefix?: string): Promise<AccountDetails[]>
  details (username: string): Promise<AccountDetails | null>
  /**
   * Removes the account; returns it with its epoch one higher than it was (the value to end its
   * tokens at, so that a Login that read the account before is refused), or null when there is none.
   */
  remove (username: string): Promise<UserRecord | null>
  /** A successful Login of this account, now. */
  recordLogin (accountId: string): Promise<void>
  /** The account's address for recovery mail (null removes it). Returns the account, or null when there is none. */
  setEmail (username: string, email: string | null): Promise<UserRecord | null>
}

export const duplicateUsername = (): StatusError => new StatusError(409, 'Username Taken', 409)

interface UserRow {
  id: string | number | bigint
  username: string
  kind: string
  password_hash: string | null
  federated: boolean
  disabled: boolean
  token_epoch: string | number | bigint
  groups: string[] | null
  groups_version: string | number | bigint
}

/** Login's row: the account and whether it has an active second factor. */
interface LoginRow extends UserRow {
  totp: boolean
}

interface DetailsRow extends LoginRow {
  email: string | null
  created_at: Date | string
  last_login_at: Date | string | null
  directory_groups: string[] | null
}

/** The account's groups, sorted as every answer gives them (code-unit order: COLLATE "C"). */
export const GROUPS_OF_USERS = 'ARRAY(SELECT DISTINCT g.name COLLATE "C" FROM account_groups g WHERE g.account_id = users.id ORDER BY 1) AS groups'
const COLUMNS = `id::text AS id, username, kind, password_hash, federated, disabled, token_epoch, groups_version, ${GROUPS_OF_USERS}`

function toRecord (row: UserRow): UserRecord {
  return {
    id: String(row.id),
    username: row.username,
    kind: row.kind === 'service' ? 'service' : 'person',
    passwordHash: row.password_hash,
    federated: row.federated,
    disabled: row.disabled,
    tokenEpoch: Number(row.token_epoch),
    groups: row.groups ?? [],
    groupsVersion: Number(row.groups_version)
  }
}

const ACTIVE_FACTOR = 'EXISTS (SELECT 1 FROM totp_factors f WHERE f.account_id = users.id AND f.active) AS totp'
/** Login's read: the record and whether a second factor is active, in one statement (one primary-key probe more). */
const LOGIN_COLUMNS = `${COLUMNS}, ${ACTIVE_FACTOR}`
const DETAILS = `${COLUMNS}, email, created_at, last_login_at, ${ACTIVE_FACTOR},
  ARRAY(SELECT g.name FROM account_groups g WHERE g.account_id = users.id AND g.source = 'directory' ORDER BY g.name COLLATE "C") AS directory_groups`

function toDetails (row: DetailsRow): AccountDetails {
  return {
    ...toRecord(row),
    createdAt: new Date(row.created_at),
    lastLoginAt: row.last_login_at === null ? null : new Date(row.last_login_at),
    totp: row.totp,
    directoryGroups: row.directory_groups ?? [],
    email: row.email
  }
}

function isUniqueViolation (error: unknown): boolean {
  return typeof error === 'object' && error !== null && 'code' in error && (error as { code: unknown }).code === '23505'
}

/** One implementation for Postgres and PGlite: the SQL is the same, only the Queryable differs. */
export function createSqlUserStore (db: Queryable, onError?: (error: unknown) => void): UserStore {
  /** Any driver failure is the contract's 503: the caller fails closed. */
  const guarded = databaseGuard(onError, (error) => isUniqueViolation(error) ? duplicateUsername() : undefined)

  const one = async (sql: string, params: unknown[]): Promise<UserRecord | null> => {
    const { rows } = await db.query<UserRow>(sql, params)
    const row = rows[0]
    return row === undefined ? null : toRecord(row)
  }
  return {
    findByUsername: async (username) => await guarded(async () => {
      const { rows } = await db.query<LoginRow>(`SELECT ${LOGIN_COLUMNS} FROM users WHERE username = $1`, [username])
      const row = rows[0]
      return row === undefined ? null : { ...toRecord(row), secondFactor: row.totp }
    }),
    findById: async (id) => await guarded(async () => {
      if (!/^[0-9]{1,18}$/.test(id)) return null
      return await one(`SELECT ${COLUMNS} FROM users WHERE id = $1`, [id])
    }),
    create: async (user) => await guarded(async () => {
      const created = await one(
        `INSERT INTO users (username, password_hash, federated, kind) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
        [user.username, user.passwordHash, user.federated, user.kind ?? 'person'])
      if (created === null) throw serviceUnavailable('database')
      return created
    }),
    setPasswordHash: async (username, passwordHash) => await guarded(async () =>
      await one(`UPDATE users SET password_hash = $2, token_epoch = token_epoch + 1, updated_at = now() WHERE username = $1 RETURNING ${COLUMNS}`,
        [username, passwordHash])),
    upgradePasswordHash: async (username, previousHash, passwordHash) => {
      await guarded(async () => await db.query('UPDATE users SET password_hash = $3, updated_at = now() WHERE username = $1 AND password_hash = $2',
        [username, previousHash, passwordHash]))
    },
    setDisabled: async (username, disabled) => await guarded(async () =>
      await one(`UPDATE users SET disabled = $2, token_epoch = token_epoch + (CASE WHEN $2 THEN 1 ELSE 0 END), updated_at = now() WHERE username = $1 RETURNING ${COLUMNS}`,
        [username, disabled])),
    raiseTokenEpoch: async (username) => await guarded(async () =>
      await one(`UPDATE users SET token_epoch = token_epoch + 1, updated_at = now() WHERE username = $1 RETURNING ${COLUMNS}`, [username])),
    list: async () => await guarded(async () => {
      const { rows } = await db.query<UserRow>(`SELECT ${COLUMNS} FROM users ORDER BY username`)
      return rows.map(toRecord)
    }),
    page: async (after, limit, prefix) => await guarded(async () => {
      // COLLATE "C": the order of the UNIQUE index's bytes, the same on every server and in PGlite.
      const where: string[] = []
      const params: unknown[] = []
      if (after !== undefined) { params.push(after); where.push(`username COLLATE "C" > $${params.length}`) }
      if (prefix !== undefined && prefix !== '') { params.push(prefix); where.push(`starts_with(username, $${params.length})`) }
      params.push(limit)
      const { rows } = await db.query<DetailsRow>(`SELECT ${DETAILS} FROM users ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
        ORDER BY username COLLATE "C" LIMIT $${params.length}`, params)
      return rows.map(toDetails)
    }),
    details: async (username) => await guarded(async () => {
      const { rows } = await db.query<DetailsRow>(`SELECT ${DETAILS} FROM users WHERE username = $1`, [username])
      const row = rows[0]
      return row === undefined ? null : toDetails(row)
    }),
    remove: async (username) => await guarded(async () =>
      await one(`DELETE FROM users WHERE username = $1 RETURNING id::text AS id, username, kind, password_hash, federated, disabled, token_epoch + 1 AS token_epoch,
        groups_version, ARRAY[]::text[] AS groups`, [username])),
    recordLogin: async (accountId) => {
      await guarded(async () => await db.query('UPDATE users SET last_login_at = now() WHERE id = $1', [accountId]))
    },
    setEmail: async (username, email) => await guarded(async () =>
      await one(`UPDATE users SET email = $2, updated_at = now() WHERE username = $1 RETURNING ${COLUMNS}`, [username, email]))
  }
}
