import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { promisify } from 'node:util'
import pg from 'pg'
import { accountName } from './accounts.js'

const run = promisify(execFile)

export interface BenchDatabase {
  url: string
  drop (): Promise<void>
}

/** A database of its own for this bench run (`ats_bench_<random>`), dropped at the end. */
export async function createBenchDatabase (adminUrl: string): Promise<BenchDatabase> {
  const name = `ats_bench_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  try {
    await admin.query(`CREATE DATABASE ${name}`)
  } finally {
    await admin.end()
  }
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async drop () {
      const dropper = new pg.Client({ connectionString: adminUrl })
      await dropper.connect()
      try {
        await dropper.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      } finally {
        await dropper.end()
      }
    }
  }
}

/** The service's own migrate command, as an operator runs it. */
export async function migrateWithCli (root: string, databaseUrl: string): Promise<void> {
  await run(process.execPath, [`${root}/dist/cli/main.js`, 'migrate'], { env: { ...process.env, DATABASE_URL: databaseUrl } })
}

/**
 * `count` accounts named like people (accountName), sharing one password. Their hashes take
 * turns from `passwordHashes` (made once each: a distinct hash per account would take minutes
 * and measure nothing more, since every Login verifies one hash either way).
 */
export async function seedAccounts (databaseUrl: string, count: number, passwordHashes: readonly string[]): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    const names = Array.from({ length: count }, (_, index) => accountName(index))
    const hashes = names.map((_, index) => passwordHashes[index % passwordHashes.length] ?? '')
    await client.query('INSERT INTO users (username, password_hash) SELECT * FROM unnest($1::text[], $2::text[])', [names, hashes])
    await client.query('ANALYZE users')
  } finally {
    await client.end()
  }
}

export async function postgresVersion (url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query<{ server_version: string }>('SHOW server_version')
    return rows[0]?.server_version ?? 'unknown'
  } finally {
    await client.end()
  }
}
