import type { DatabaseSettings } from '../config/parts/database.js'
import { createPgliteDatabase } from './pglite.js'
import { createPostgresDatabase } from './postgres.js'
import type { Database } from './database.js'

export interface OpenDatabaseOptions {
  /** Errors of idle pooled Postgres connections. */
  onPoolError?: (error: Error) => void
  /** What this process does (`serve`, `user add`, …): told to a process the embedded database's directory refuses. */
  command?: string
}

/** The one place that picks the user database: Postgres when DATABASE_URL is set, else PGlite. */
export async function openDatabase (config: Pick<DatabaseSettings, 'databaseUrl' | 'dataDir'> & Partial<Pick<DatabaseSettings, 'databasePool'>>, options: OpenDatabaseOptions = {}): Promise<Database> {
  const { onPoolError } = options
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
  return await createPgliteDatabase(config.dataDir, options.command)
}
