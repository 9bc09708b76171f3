import { Type } from 'typebox'
import { variables, type Env } from '../variables.js'

/** Where accounts, keys and the audit trail live: Postgres, or the embedded PGlite (src/db). */
export const DatabaseSchema = Type.Object({
  DATABASE_URL: Type.Optional(Type.String({ format: 'uri', protocols: ['postgres:', 'postgresql:'], docDefault: 'unset: embedded PGlite', description: 'Postgres connection string (`postgres://…`)' })),
  DATABASE_POOL_MAX: Type.Integer({ minimum: 1, maximum: 1000, default: 10, description: 'connections of the Postgres pool' }),
  DATABASE_CONNECT_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 60_000, default: 2000, description: 'the longest wait for a new Postgres connection' }),
  DATABASE_QUERY_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 600_000, default: 5000, description: 'the longest one Postgres query may take' }),
  DATABASE_IDLE_TIMEOUT_MS: Type.Integer({ minimum: 1000, maximum: 3_600_000, default: 30_000, description: 'how long an idle pooled connection is kept' }),
  AUTH_DATA_DIR: Type.String({ default: './data', description: 'where the embedded PGlite keeps its files (and the TOTP key file, when it is made)' })
}, { $id: 'database', title: 'Database', description: 'Accounts, API keys, passkeys, second factors and the audit trail: Postgres when `DATABASE_URL` is set, else the embedded PGlite in `AUTH_DATA_DIR`.' })

export interface DatabaseSettings {
  databaseUrl: string | undefined
  /** Postgres pool: connections, and the timeouts of connecting, of one query, and of an idle connection. */
  databasePool: { max: number, connectTimeoutMs: number, queryTimeoutMs: number, idleTimeoutMs: number }
  /** Where the embedded PGlite keeps its files when DATABASE_URL is unset. */
  dataDir: string
}

export function readDatabase (env: Env): DatabaseSettings {
  const vars = variables(DatabaseSchema, env)
  return {
    databaseUrl: vars.read('DATABASE_URL'),
    databasePool: {
      max: vars.read('DATABASE_POOL_MAX'),
      connectTimeoutMs: vars.read('DATABASE_CONNECT_TIMEOUT_MS'),
      queryTimeoutMs: vars.read('DATABASE_QUERY_TIMEOUT_MS'),
      idleTimeoutMs: vars.read('DATABASE_IDLE_TIMEOUT_MS')
    },
    dataDir: vars.read('AUTH_DATA_DIR')
  }
}
