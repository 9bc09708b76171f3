import { PGlite, type PGliteInterface } from '@electric-sql/pglite'
import type { Database, Transaction } from '../../src/db/database.js'
import tap from 'tap'
import { wrapPglite } from '../../src/db/pglite.js'
import { pgliteFromTemplate } from './pglite-template.js'

/** The tables the template holds no row of (the service's own): emptied when an instance is reused. */
let emptyTables: Promise<string[]> | undefined
/** Instances a test has closed, to be emptied and handed to the next test of this process. */
const idle: PGliteInterface[] = []
let ended = false
let closesAtEnd = false

/** The template's tables that hold no row, read from a new instance before any test has used it. */
async function tablesWithoutRows (db: PGliteInterface): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>("SELECT quote_ident(tablename) AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")
  const empty: string[] = []
  for (const { name } of rows) {
    const count = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${name}`)
    if (count.rows[0]?.n === 0) empty.push(name)
  }
  return empty
}

/** A new instance holding the template; the first of the process also says which tables reset() empties. */
async function created (): Promise<PGliteInterface> {
  if (!closesAtEnd) {
    closesAtEnd = true
    // A PGlite loaded from a dump keeps the process alive until it is closed: the instances
    // kept for reuse are closed when the file's last test is done.
    tap.teardown(async () => {
      ended = true
      await Promise.all(idle.splice(0).map(async (db) => { await db.close().catch(() => {}) }))
    })
  }
  const db = await pgliteFromTemplate()
  emptyTables ??= tablesWithoutRows(db).catch((error: unknown) => { emptyTables = undefined; throw error })
  await emptyTables
  return db
}

/**
 * A used instance as the template left it: session state discarded (DISCARD ALL refuses to run
 * inside a transaction, so an instance left in one is not reused), and every table the template
 * holds no row of emptied, its sequences restarted; the migration record is the template's.
 */
async function reset (db: PGliteInterface): Promise<void> {
  await db.exec('DISCARD ALL')
  const tables = await emptyTables
  // Replica mode for the statement's transaction: auth_events' append-only trigger refuses a
  // TRUNCATE, as it should from the service; the test harness empties it like a new database.
  if (tables !== undefined && tables.length > 0) {
    await db.exec(`BEGIN; SET LOCAL session_replication_role = replica; TRUNCATE ${tables.join(', ')} RESTART IDENTITY CASCADE; COMMIT`)
  }
}

async function take (): Promise<PGliteInterface> {
  for (let db = idle.pop(); db !== undefined; db = idle.pop()) {
    try {
      await reset(db)
      return db
    } catch {
      // Closed by its test, or left mid-transaction: not reused.
      await db.close().catch(() => {})
    }
  }
  return await created()
}

/**
 * A fresh in-memory PGlite with the migrations applied. Creating a PGlite costs
 * seconds (initdb in WebAssembly); loading the migrated template (pglite-template.ts, made once
 * per machine) about 1.2 s of CPU; emptying one that an earlier test of the same process has
 * closed costs milliseconds (these were the largest part of the fast suite's CPU
 * after the test processes themselves). Each instance is loaded from the template itself: a
 * loaded template kept to be cloned cost every file that used PGlite 1.8 s more.
 *
 * Closing the returned database hands the instance back for reuse; the returned seam refuses
 * every call after that, as a closed PGlite does, so that nothing of one test reaches the next.
 */
export async function freshPglite (options: { migrated?: boolean } = {}): Promise<Database> {
  if (options.migrated === false) return wrapPglite(await PGlite.create())
  const db = await take()
  const inner = wrapPglite(db)
  let closed = false
  const open = (): void => {
    if (closed) throw new Error('PGlite is closed')
  }
  return {
    ...inner,
    async query<Row extends object> (sql: string, params?: readonly unknown[]) { open(); return await inner.query<Row>(sql, params) },
    async exec (sql: string) { open(); await inner.exec(sql) },
    async transaction<T> (work: (tx: Transaction) => Promise<T>) { open(); return await inner.transaction<T>(work) },
    async close () {
      if (closed) return
      closed = true
      if (ended || db.closed) await db.close().catch(() => {})
      else idle.push(db)
    }
  }
}
