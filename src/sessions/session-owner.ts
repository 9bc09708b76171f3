import type { Queryable } from '../db/database.js'
import { serviceUnavailable } from '../errors/status.js'

/**
 * The account a session id belongs to (the admin API ends a session by its id alone), read from
 * the sessions table (sql/005). Null for an id that names no session.
 */
export function sessionOwner (db: Queryable): (sessionId: string) => Promise<string | null> {
  return async (sessionId) => {
    try {
      const { rows } = await db.query<{ account_id: string }>('SELECT account_id::text AS account_id FROM sessions WHERE id = $1', [sessionId])
      return rows[0]?.account_id ?? null
    } catch (error) {
      throw serviceUnavailable('database', error)
    }
  }
}
