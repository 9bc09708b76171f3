import pg from 'pg'
import type { Database, Transaction } from './database.js'

export interface PostgresOptions {
  connectionString: string
  max?: number
  connectionTimeoutMillis?: number
  idleTimeoutMillis?: number
  queryTimeoutMillis?: number
  /** Called for errors of idle pooled connections (a restarted server): never a crash. */
  onPoolError?: (error: Error) => void
}

export function createPostgresDatabase (options: PostgresOptions): Database {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMillis ?? 2000,
    idleTimeoutMillis: options.idleTimeoutMillis ?? 30_000,
    query_timeout: options.queryTimeoutMillis ?? 5000
  })
  // Without a listener an idle client's error (server restart) would crash the process.
  pool.on('error', options.onPoolError ?? (() => {}))

  const run = async <Row extends object>(client: pg.Pool | pg.PoolClient, sql: string, params?: readonly unknown[]) => {
    const result = await client.query<Row>(sql, params === undefined ? undefined : [...params])
    return { rows: result.rows }
  }

  return {
    kind: 'postgres',
    query: async (sql, params) => await run(pool, sql, params),
    async exec (sql) {
      await pool.query(sql)
    },
    async transaction (work) {
      const client = await pool.connect()
      const tx: Transaction = {
        query: async (sql, params) => await run(client, sql, params),
        async exec (sql) { await client.query(sql) }
      }
      try {
        await client.query('BEGIN')
        const result = await work(tx)
        await client.query('COMMIT')
        return result
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {})
        throw error
      } finally {
        client.release()
      }
    },
    async close () {
      await pool.end()
    }
  }
}
