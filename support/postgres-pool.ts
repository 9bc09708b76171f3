import pg from 'pg'
import type { Scope } from './processes.js'

/**
 * Empty Postgres databases for tests, reused instead of created and dropped.
 *
 * CREATE DATABASE copies template1 through the WAL and DROP DATABASE waits for the files to
 * go: together 1.5-3 s on this machine's Postgres (fsync on), for each of the ~80 databases a
 * run of the suite asked for, in the tests' own time. Here a test takes a database named
 * `ats_pool_<n>` that no one else holds, made the first time it is needed and kept on the
 * server: held by a session-level advisory lock on an admin connection that lives as long
 * as the test (the lock goes with the connection, so a killed test process frees its
 * databases), and emptied when taken: connections still open on it are ended and its public
 * schema, where the migrations put everything, is dropped and made again (milliseconds).
 * What the test sees is what it saw before: an empty database of its own, migrated by nobody.
 */

// Any constant: the advisory-lock space shared with nothing else that uses this server's `test` database.
const POOL_LOCK_CLASS = 72_403_118
const NAME_PREFIX = 'ats_pool_'

async function emptyPublicSchema (url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    // As a new database has it: owned by the database owner's role, with no objects.
    await client.query('DROP SCHEMA IF EXISTS public CASCADE; CREATE SCHEMA public AUTHORIZATION pg_database_owner')
  } finally {
    await client.end()
  }
}

/** A held, emptied database for `t`; returns its URL. `adminUrl` names the server and an existing database. */
export async function takePooledDatabase (scope: Scope, adminUrl: string): Promise<string> {
  const admin = new pg.Client({ connectionString: adminUrl })
  // An error on the idle admin connection (the server restarted) must not crash the test process.
  admin.on('error', () => {})
  await admin.connect()
  try {
    for (let n = 0; ; n++) {
      const { rows } = await admin.query<{ held: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS held', [POOL_LOCK_CLASS, n])
      if (rows[0]?.held !== true) continue
      const name = `${NAME_PREFIX}${n}`
      const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])
      if (exists.rowCount === 0) {
        await admin.query(`CREATE DATABASE ${name}`)
      } else {
        // Whatever a previous holder left connected (a process killed before its teardown).
        await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name])
      }
      const url = new URL(adminUrl)
      url.pathname = `/${name}`
      await emptyPublicSchema(url.toString())
      scope.teardown(async () => {
        // Ending the session gives the lock up; the next holder empties the database.
        await admin.end().catch(() => {})
      })
      return url.toString()
    }
  } catch (error) {
    await admin.end().catch(() => {})
    throw error
  }
}
