import { PGlite } from '@electric-sql/pglite'
import tap from 'tap'
import { wrapPglite } from '../../src/db/pglite.js'
import type { Database } from '../../src/db/database.js'
import { pgliteFromTemplate } from './pglite-template.js'

let template: Promise<PGlite> | undefined

/**
 * A fresh in-memory PGlite with the migrations applied. Creating a PGlite costs
 * seconds (initdb in WebAssembly); cloning a migrated template costs a fraction.
 * The template lives as long as the test process, loaded from the machine's migrated
 * dump (pglite-template.ts) rather than made again in every test process.
 */
export async function freshPglite (options: { migrated?: boolean } = {}): Promise<Database> {
  if (options.migrated === false) return wrapPglite(await PGlite.create())
  if (template === undefined) {
    const loading = pgliteFromTemplate()
    template = loading
    // A PGlite loaded from a dump keeps the process alive until it is closed: close the
    // template when the file's last test is done.
    tap.teardown(async () => { await (await loading).close() })
  }
  return wrapPglite(await (await template).clone())
}
