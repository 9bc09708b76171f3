import { mkdir } from 'node:fs/promises'
import { PGlite, type PGliteInterface } from '@electric-sql/pglite'
import type { Database, Transaction } from './queryable.js'

/**
 * The embedded default: Postgres compiled to WebAssembly, in this process, with
 * its files under `dataDir` (or in memory when `dataDir` is undefined).
 */
export async function createPgliteDatabase (dataDir: string | undefined): Promise<Database> {
  if (dataDir !== undefined) await mkdir(dataDir, { recursive: true })
  return wrapPglite(await PGlite.create(dataDir))
}

/** The Database seam over a PGlite instance; closing the seam closes the instance. */
export function wrapPglite (db: PGliteInterface): Database {
  return {
    kind: 'pglite',
    async query<Row extends object> (sql: string, params?: readonly unknown[]) {
      const result = await db.query<Row>(sql, params === undefined ? undefined : [...params])
      return { rows: result.rows }
    },
    async exec (sql) {
      await db.exec(sql)
    },
    async transaction (work) {
      return await db.transaction(async (t) => {
        const tx: Transaction = {
          async exec (sql) { await t.exec(sql) },
          async query<Row extends object> (sql: string, params?: readonly unknown[]) {
            const result = await t.query<Row>(sql, params === undefined ? undefined : [...params])
            return { rows: result.rows }
          }
        }
        return await work(tx)
      })
    },
    async close () {
      await db.close()
    }
  }
}
