import type { Config } from '../config.js'
import { createPgliteDatabase } from './pglite.js'
import { createPostgresDatabase } from './postgres.js'
import type { Database } from './queryable.js'

/** The one place that picks the user database: Postgres when DATABASE_URL is set, else PGlite. */
export async function openDatabase (config: Pick<Config, 'databaseUrl' | 'dataDir'> & Partial<Pick<Config, 'databasePool'>>, onPoolError?: (error: Error) => void): Promise<Database> {
  if (config.databaseUrl !== undefined) {
    const pool = config.databasePool
    return createPostgresDatabase({
      connectionString: config.databaseUrl,
      onPoolError,
      ...(pool === undefined
        ? {}
        : { max: pool.max, connectionTimeoutMillis: pool.connectTimeoutMs, queryTimeoutMillis: pool.queryTimeoutMs, idleTimeoutMillis: pool.idleTimeoutMs })
    })
  }
  return await createPgliteDatabase(config.dataDir)
}
