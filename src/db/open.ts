import type { Config } from '../config.js'
import { createPgliteDatabase } from './pglite.js'
import { createPostgresDatabase } from './postgres.js'
import type { Database } from './queryable.js'

/** The one place that picks the user database: Postgres when DATABASE_URL is set, else PGlite. */
export async function openDatabase (config: Pick<Config, 'databaseUrl' | 'dataDir'>, onPoolError?: (error: Error) => void): Promise<Database> {
  if (config.databaseUrl !== undefined) {
    return createPostgresDatabase({ connectionString: config.databaseUrl, onPoolError })
  }
  return await createPgliteDatabase(config.dataDir)
}
