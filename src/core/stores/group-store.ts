import type { Database } from '../../db/database.js'
import { databaseGuard } from '../../db/guarded.js'

/**
 * Group membership in Postgres (sql/013-groups.sql): one row an account and group, from one
 * source: `local` (the admin API, the CLI) or `directory` (a federated account's, replaced at
 * each Login). A token carries the union (the user store's reads: `groups`).
 */

export type GroupSource = 'local' | 'directory'

export interface GroupsSet {
  accountId: string
  username: string
  /** The account's groups, every source, before and after (sorted). */
  before: readonly string[]
  after: readonly string[]
  /** The account's groups version after the change (raised only when the source's set changed). */
  version: number
  /** Whether this source's set changed. */
  changed: boolean
}

export interface GroupCount {
  name: string
  /** Accounts in the group, any source. */
  members: number
}

export interface GroupStore {
  /**
   * Makes `names` (valid, sorted) the account's whole set from `source`, the other source's
   * untouched. Null when there is no such account. The account row is locked first, so two
   * changes of one account apply one after the other.
   */
  set (username: string, source: GroupSource, names: readonly string[]): Promise<GroupsSet | null>
  /** Every group with a member, by name. */
  list (): Promise<GroupCount[]>
  /** Up to `limit` usernames of the group's members after `after` (keyset pagination, username order). */
  members (name: string, after: string | undefined, limit: number): Promise<string[]>
}

/** Whether the names stored (each once) are the set asked for. */
function sameNames (stored: readonly string[] | null, names: readonly string[]): boolean {
  const wanted = new Set(names)
  return (stored ?? []).length === wanted.size && (stored ?? []).every((name) => wanted.has(name))
}

/** The account's groups, local and directory's, each once, sorted: `account` is the SQL naming its id. */
const unionOf = (account: string): string => `ARRAY(SELECT DISTINCT name COLLATE "C" FROM account_groups WHERE account_id = ${account} ORDER BY 1) AS groups`
const UNION = unionOf('$1')

export function createSqlGroupStore (db: Pick<Database, 'query' | 'transaction'>, onError?: (error: unknown) => void): GroupStore {
  const guarded = databaseGuard(onError)
  /** The transaction that makes the change (the account row locked first, so two changes of one account apply one after the other). */
  const write = async (username: string, source: GroupSource, names: readonly string[]): Promise<GroupsSet | null> => await db.transaction(async (tx): Promise<GroupsSet | null> => {
    // Locked before anything is read: the statements after it each see the other change's rows.
    const { rows: found } = await tx.query<{ id: string, username: string }>('SELECT id::text AS id, username FROM users WHERE username = $1 FOR NO KEY UPDATE', [username])
    const account = found[0]
    if (account === undefined) return null
    const { rows: before } = await tx.query<{ groups: string[] }>(`SELECT ${UNION}`, [account.id])
    const { rows: removed } = await tx.query('DELETE FROM account_groups WHERE account_id = $1 AND source = $2 AND NOT (name = ANY($3::text[])) RETURNING name', [account.id, source, names])
    const { rows: added } = await tx.query(`INSERT INTO account_groups (account_id, name, source) SELECT $1, n, $2 FROM unnest($3::text[]) AS n
      ON CONFLICT DO NOTHING RETURNING name`, [account.id, source, names])
    const changed = removed.length + added.length > 0
    const { rows: version } = await tx.query<{ groups_version: string | number }>(
      'UPDATE users SET groups_version = groups_version + (CASE WHEN $2 THEN 1 ELSE 0 END) WHERE id = $1 RETURNING groups_version', [account.id, changed])
    const { rows: after } = await tx.query<{ groups: string[] }>(`SELECT ${UNION}`, [account.id])
    return {
      accountId: account.id,
      username: account.username,
      before: before[0]?.groups ?? [],
      after: after[0]?.groups ?? [],
      version: Number(version[0]?.groups_version ?? 0),
      changed
    }
  })
  return {
    set: async (username, source, names) => await guarded(async () => {
      // Nearly every call is a federated Login handing over the set it stored last time: one read
      // (one snapshot) answers it, with no transaction, lock or UPDATE of the account's row. A
      // change made alongside is that change's to push; this answer is what a write would give.
      const { rows: current } = await db.query<{ id: string, username: string, own: string[] | null, groups: string[] | null, groups_version: string | number }>(
        `SELECT id::text AS id, username, groups_version,
           ARRAY(SELECT name COLLATE "C" FROM account_groups WHERE account_id = users.id AND source = $2 ORDER BY 1) AS own,
           ${unionOf('users.id')}
         FROM users WHERE username = $1`, [username, source])
      const found = current[0]
      if (found === undefined) return null
      if (sameNames(found.own, names)) {
        const groups = found.groups ?? []
        return { accountId: found.id, username: found.username, before: groups, after: groups, version: Number(found.groups_version), changed: false }
      }
      return await write(username, source, names)
    }),
    list: async () => await guarded(async () => {
      const { rows } = await db.query<{ name: string, members: string | number }>(
        'SELECT name, count(DISTINCT account_id) AS members FROM account_groups GROUP BY name ORDER BY name COLLATE "C"')
      return rows.map((row) => ({ name: row.name, members: Number(row.members) }))
    }),
    members: async (name, after, limit) => await guarded(async () => {
      const { rows } = await db.query<{ username: string }>(
        `SELECT DISTINCT u.username COLLATE "C" AS username FROM account_groups g JOIN users u ON u.id = g.account_id
          WHERE g.name = $1 AND ($2::text IS NULL OR u.username COLLATE "C" > $2) ORDER BY 1 LIMIT $3`, [name, after ?? null, limit])
      return rows.map((row) => row.username)
    })
  }
}
