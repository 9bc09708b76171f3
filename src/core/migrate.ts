import type { Database } from '../db/database.js'
import { assertMigrated, MIGRATIONS_DIR, runMigrations } from '../db/migrate.js'
import { canonicalizeUsernames, type UsernameReport } from './canonical-usernames.js'

export interface MigrationResult {
  applied: string[]
  /** Stored usernames brought to their canonical form, and those that could not be. */
  usernames: UsernameReport
}

/** The schema's migrations, then the accounts' usernames brought to their canonical form, in one transaction. */
export async function migrate (db: Database, dir: string = MIGRATIONS_DIR): Promise<MigrationResult> {
  const { applied, then: usernames } = await runMigrations(db, canonicalizeUsernames, dir)
  return { applied, usernames }
}

/**
 * Makes a database ready for work: the embedded PGlite is migrated here; a real Postgres is
 * migrated by `migrate` (a one-shot step in compose), and work on an unmigrated one is refused.
 * Returns what migrating the embedded one found of usernames without one canonical form.
 */
export async function migrateOrCheck (database: Database): Promise<UsernameReport | undefined> {
  if (database.kind === 'pglite') return (await migrate(database)).usernames
  await assertMigrated(database)
  return undefined
}
