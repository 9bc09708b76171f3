import { createHash } from 'node:crypto'
import { execFile } from 'node:child_process'
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { gunzipSync } from 'node:zlib'
import { PGlite } from '@electric-sql/pglite'
import { MIGRATIONS_DIR } from '../../src/db/migrate.js'
import { migrate } from '../../src/core/migrate.js'
import { wrapPglite } from '../../src/db/pglite.js'

/**
 * A migrated PGlite data directory, made once per machine and kept as PGlite's own dump
 * (`dumpDataDir`, a gzipped tar of PGDATA) in the temp directory, named by a digest of the
 * PGlite version and every file in sql/: a new migration or another PGlite makes another.
 *
 * Why: making one runs initdb in WebAssembly, then the migrations: 4.7 s of CPU. Loading the
 * dump costs 0.9 s. Each test process that touched PGlite used to make its own, and so did
 * each service or command the tests started on a fresh AUTH_DATA_DIR.
 */

const run = promisify(execFile)
const ROOT = new URL('../../', import.meta.url)

let dumpFile: Promise<string> | undefined

async function templateKey (): Promise<string> {
  const hash = createHash('sha256')
  hash.update(await readFile(new URL('node_modules/@electric-sql/pglite/package.json', ROOT)))
  for (const name of (await readdir(MIGRATIONS_DIR)).sort()) {
    hash.update(`\0${name}\0`)
    hash.update(await readFile(join(MIGRATIONS_DIR, name)))
  }
  return hash.digest('hex').slice(0, 16)
}

async function makeDump (file: string): Promise<void> {
  const db = await PGlite.create()
  try {
    await migrate(wrapPglite(db))
    const dump = await db.dumpDataDir('gzip')
    // Written aside and renamed: a process reading it never sees half a file, and two
    // processes making it at once both succeed (the last rename wins; both are the same).
    const partial = `${file}.${process.pid}.partial`
    await writeFile(partial, Buffer.from(await dump.arrayBuffer()))
    await rename(partial, file)
  } finally {
    await db.close()
  }
}

/** The path of the dump, made first when this machine has none for this PGlite and sql/. */
export async function migratedPgliteDump (): Promise<string> {
  dumpFile ??= (async () => {
    const file = join(tmpdir(), `ats-pglite-migrated-${await templateKey()}.tar.gz`)
    const present = await readFile(file).then(() => true, () => false)
    if (!present) await makeDump(file)
    return file
  })().catch((error: unknown) => { dumpFile = undefined; throw error })
  return await dumpFile
}

let unpacked: Promise<Blob> | undefined

/**
 * A new in-memory PGlite holding the migrated template. The dump is read and unpacked once per
 * process (node:zlib, ~0.15 s of CPU) and every instance is loaded from the plain tar: loading
 * the gzipped dump cost 1.8 s of CPU (PGlite unpacks it in JavaScript), the plain tar 1.1-1.2 s,
 * as a clone of a loaded instance did, without the loaded instance a clone needs beside it.
 */
export async function pgliteFromTemplate (): Promise<PGlite> {
  unpacked ??= (async () => new Blob([gunzipSync(await readFile(await migratedPgliteDump()))]))()
    .catch((error: unknown) => { unpacked = undefined; throw error })
  try {
    return await PGlite.create({ loadDataDir: await unpacked })
  } catch (error) {
    // A damaged dump (a disk that filled up, say) is made again once, not failed on forever.
    await rm(await migratedPgliteDump(), { force: true })
    dumpFile = undefined
    unpacked = undefined
    throw error
  }
}

/**
 * Fills `dir` (created if missing) with the migrated template, for a service or a command
 * started on AUTH_DATA_DIR=dir: it opens an existing database instead of making one.
 * Only for tests that are not about the first start (those keep an empty directory).
 */
export async function seedMigratedDataDir (dir: string): Promise<string> {
  await mkdir(dir, { recursive: true })
  // The dump's members are absolute (/base/…, /global/…); tar makes them relative to -C.
  await run('tar', ['-xzf', await migratedPgliteDump(), '-C', dir])
  return dir
}
