import { PGlite, type PGliteInterface } from '@electric-sql/pglite'
import { lockDataDir, type DataDirLock } from './data-dir-lock.js'
import { PrivateNodeFS } from './private-node-fs.js'
import type { Database, Transaction } from './database.js'
import { inSpan, type SpanAttributes } from '../tracing/spans.js'

/**
 * The embedded default: Postgres compiled to WebAssembly, in this process, with
 * its files under `dataDir` (or in memory when `dataDir` is undefined). The
 * directory is locked for this process first (`command` says what it does, for
 * whoever is refused), and unlocked when the database is closed.
 */
export async function createPgliteDatabase (dataDir: string | undefined, command = 'serve'): Promise<Database> {
  if (dataDir === undefined) return wrapPglite(await PGlite.create())
  const lock = await lockDataDir(dataDir, command)
  try {
    return wrapPglite(await PGlite.create({ fs: new PrivateNodeFS(lock.owner.dataDir) }), lock)
  } catch (error) {
    await lock.release()
    throw error
  }
}

/**
 * PGlite runs in this process, so no driver instrumentation sees it: its queries get a span of
 * our own (tracing on), with the statement as written (its values are parameters, never in it).
 */
function spanAttributes (sql: string): SpanAttributes {
  return { 'db.system.name': 'postgresql', 'db.query.text': sql }
}

/** The Database seam over a PGlite instance; closing the seam closes the instance, then gives up its directory. */
export function wrapPglite (db: PGliteInterface, lock?: DataDirLock): Database {
  return {
    kind: 'pglite',
    dataDirLock: lock,
    async query<Row extends object> (sql: string, params?: readonly unknown[]) {
      const result = await inSpan('pglite.query', spanAttributes(sql), async () => await db.query<Row>(sql, params === undefined ? undefined : [...params]))
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
            const result = await inSpan('pglite.query', spanAttributes(sql), async () => await t.query<Row>(sql, params === undefined ? undefined : [...params]))
            return { rows: result.rows }
          }
        }
        return await work(tx)
      })
    },
    async close () {
      try {
        await db.close()
      } finally {
        await lock?.release()
      }
    }
  }
}
