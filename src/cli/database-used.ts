import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { AdminClient } from '../admin/client.js'
import type { DatabaseSettings } from '../config/parts/database.js'
import { Failure } from './exit-codes.js'

/**
 * Which database an account command works on, for `--verbose` and for the refusal below: the
 * admin API of a running service, Postgres (host, port and database; never a password), or the
 * embedded one with its absolute directory.
 */
export function databaseUsed (config: Pick<DatabaseSettings, 'databaseUrl' | 'dataDir'>, route: AdminClient | undefined): string {
  if (route !== undefined) return `the admin API of the running service at ${route.url}`
  if (config.databaseUrl !== undefined) {
    const url = new URL(config.databaseUrl)
    return `Postgres at ${url.host}${url.pathname}`
  }
  return `the embedded database in ${resolve(config.dataDir)}`
}

/**
 * An account command on the embedded default never makes a database: run from another directory,
 * it would otherwise create an empty one there and answer from it, as if the accounts were gone.
 * Only `serve` and `migrate` create one. PGlite's directory is a Postgres data directory,
 * which always holds PG_VERSION.
 */
export function requireEmbeddedDatabase (config: Pick<DatabaseSettings, 'databaseUrl' | 'dataDir'>): void {
  if (config.databaseUrl !== undefined) return
  const dir = resolve(config.dataDir)
  if (existsSync(join(dir, 'PG_VERSION'))) return
  throw new Failure(`no database in ${dir}: run the command in the directory the service runs in, or set AUTH_DATA_DIR (or DATABASE_URL); only serve and migrate create one`)
}
