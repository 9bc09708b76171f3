import { PGlite } from '@electric-sql/pglite'
import { wrapPglite } from '../../src/db/pglite.js'
import { migrate } from '../../src/db/migrate.js'
import type { Database } from '../../src/db/database.js'

let template: Promise<PGlite> | undefined

/**
 * A fresh in-memory PGlite with the migrations applied. Creating a PGlite costs
 * seconds (initdb in WebAssembly); cloning a migrated template costs a fraction.
 * The template lives as long as the test process.
 */
export async function freshPglite (options: { migrated?: boolean } = {}): Promise<Database> {
  if (options.migrated === false) return wrapPglite(await PGlite.create())
  template ??= (async () => {
    const db = await PGlite.create()
    await migrate(wrapPglite(db))
    return db
  })()
  return wrapPglite(await (await template).clone())
}
