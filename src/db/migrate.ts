import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Database, Queryable } from './database.js'

/** `sql/` at the package root, found the same way from `src/` (tests) and `dist/` (built). */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../sql/', import.meta.url))

// Any constant works; it only has to be the same for every instance migrating one database.
const MIGRATION_LOCK_ID = 72_403_117

export interface MigrationResult<Then> {
  applied: string[]
  /** What `then` returned: the work that must see the schema as migrated, under the same lock. */
  then: Then
}

/**
 * Applies the forward-only migrations in `sql/` that this database has not seen,
 * in name order, in one transaction under an advisory lock, so instances that
 * start together neither race nor half-apply. `then` runs last in that transaction:
 * the data fix-ups of the layers above (the accounts' canonical usernames), which know
 * what the rows mean; this layer knows only the schema.
 */
export async function runMigrations<Then> (db: Database, then: (tx: Queryable) => Promise<Then>, dir: string = MIGRATIONS_DIR): Promise<MigrationResult<Then>> {
  const files = (await readdir(dir)).filter((name) => /^\d+-[\w-]+\.sql$/.test(name)).sort()
  const scripts = await Promise.all(files.map(async (name) => ({ name, sql: await readFile(join(dir, name), 'utf8') })))
  return await db.transaction(async (tx) => {
    // Lock first: even CREATE TABLE IF NOT EXISTS races between concurrent sessions.
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_ID])
    await tx.exec('CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())')
    const { rows } = await tx.query<{ name: string }>('SELECT name FROM schema_migrations')
    const done = new Set(rows.map((row) => row.name))
    const applied: string[] = []
    for (const script of scripts) {
      if (done.has(script.name)) continue
      await tx.exec(script.sql)
      await tx.query('INSERT INTO schema_migrations (name) VALUES ($1)', [script.name])
      applied.push(script.name)
    }
    return { applied, then: await then(tx) }
  })
}

export class NotMigratedError extends Error {
  constructor () {
    super('the database has no users table yet: run `auth-token-service migrate` (or `npm run migrate`) first')
    this.name = 'NotMigratedError'
  }
}

/** A real Postgres is migrated by `migrate`; refuse to work on one that was not. */
export async function assertMigrated (database: Database): Promise<void> {
  const { rows } = await database.query<{ present: boolean }>("SELECT to_regclass('public.users') IS NOT NULL AS present")
  if (rows[0]?.present !== true) throw new NotMigratedError()
}
