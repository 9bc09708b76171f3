import pg from 'pg'

/**
 * The database a DATABASE_URL names, made when it does not exist yet: `migrate` is the first
 * thing run against a new Postgres (README: `DATABASE_URL=…/auth`, then `migrate`), and a fresh
 * server has no `auth` database. It is created from the server's maintenance database, with the
 * URL's own user, so the user needs the right to create databases; without it the error says
 * what to run instead.
 */

export interface EnsuredDatabase {
  created: boolean
  /** The database's name, as the URL gives it (decoded). */
  name: string
}

/** SQLSTATE codes: no such database; already there (made meanwhile by another migrate). */
const MISSING = '3D000'
const ALREADY_THERE = new Set(['42P04', '23505'])
const CONNECT_TIMEOUT_MS = 10_000

/** The database could not be made: the message is the line the operator reads. */
export class DatabaseNotCreatedError extends Error {
  constructor (name: string, cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause)
    super(`the database "${name}" does not exist and could not be created (${why}): create it (\`createdb ${name.includes(' ') ? `'${name}'` : name}\`, ` +
      'or CREATE DATABASE as a user allowed to), then run migrate again', { cause })
    this.name = 'DatabaseNotCreatedError'
  }
}

function codeOf (error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string' ? error.code : undefined
}

function withDatabase (connectionString: string, name: string): string {
  const url = new URL(connectionString)
  url.pathname = `/${encodeURIComponent(name)}`
  return url.toString()
}

const quotedIdentifier = (name: string): string => `"${name.replaceAll('"', '""')}"`

/** Connects once and leaves; rejects as the driver does. */
async function tryConnect (connectionString: string): Promise<void> {
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: CONNECT_TIMEOUT_MS })
  try {
    await client.connect()
  } finally {
    await client.end().catch(() => {})
  }
}

/** Makes sure the URL's database exists: found as it is, or created. Other errors (unreachable, a wrong password) are the driver's. */
export async function ensureDatabase (connectionString: string): Promise<EnsuredDatabase> {
  const name = decodeURIComponent(new URL(connectionString).pathname.slice(1))
  try {
    await tryConnect(connectionString)
    return { created: false, name }
  } catch (error) {
    if (codeOf(error) !== MISSING || name === '') throw error
  }
  // `postgres` is the usual maintenance database; `template1` is on every server.
  let admin: pg.Client | undefined
  for (const maintenance of ['postgres', 'template1']) {
    const client = new pg.Client({ connectionString: withDatabase(connectionString, maintenance), connectionTimeoutMillis: CONNECT_TIMEOUT_MS })
    try {
      await client.connect()
      admin = client
      break
    } catch (error) {
      await client.end().catch(() => {})
      if (codeOf(error) !== MISSING) throw new DatabaseNotCreatedError(name, error)
    }
  }
  if (admin === undefined) throw new DatabaseNotCreatedError(name, new Error('no maintenance database (postgres, template1) to create it from'))
  try {
    await admin.query(`CREATE DATABASE ${quotedIdentifier(name)}`)
    return { created: true, name }
  } catch (error) {
    if (ALREADY_THERE.has(codeOf(error) ?? '')) return { created: false, name }
    throw new DatabaseNotCreatedError(name, error)
  } finally {
    await admin.end().catch(() => {})
  }
}
