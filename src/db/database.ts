import type { DataDirLock } from './data-dir-lock.js'

/**
 * The whole SQL seam: the user store and the migrator need only this, which both
 * a node-postgres Pool and PGlite provide. Everything above speaks Postgres SQL
 * that PGlite runs unchanged.
 */
export interface Queryable {
  query<Row extends object = Record<string, unknown>> (sql: string, params?: readonly unknown[]): Promise<{ rows: Row[] }>
}

export interface Transaction extends Queryable {
  /** Run several statements (a migration file) as one script. */
  exec (sql: string): Promise<void>
}

export interface Database extends Transaction {
  /** Which backend this is, for the start-up log line. */
  readonly kind: 'postgres' | 'pglite'
  /** The embedded database's hold on its directory (PGlite with a data directory only). */
  readonly dataDirLock?: DataDirLock | undefined
  /** Run `work` in one transaction on one connection. */
  transaction<T> (work: (tx: Transaction) => Promise<T>): Promise<T>
  close (): Promise<void>
}
