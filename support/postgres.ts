import type { ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import pg from 'pg'
import { migrate } from '../src/core/migrate.js'
import type { Database } from '../src/db/database.js'
import { createPostgresDatabase } from '../src/db/postgres.js'
import { takePooledDatabase } from './postgres-pool.js'
import { freePort, reachable, run, type Scope, spawnTracked, stopChild, tempDir, waitFor } from './processes.js'

/**
 * Postgres for the tests and the soak run: a fresh database of each test's own on the running
 * Postgres, or a throwaway `postgres` (initdb into a temp dir) on a free port, to stop or kill.
 */

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

let postgresSeen: Promise<string> | undefined

/**
 * The running Postgres (TEST_DATABASE_URL); when it is absent the run fails with the command that
 * starts it. Asked once per process, as Redis is (redis.ts, requireRedis).
 */
export async function requirePostgres (): Promise<string> {
  postgresSeen ??= reachable(TEST_DATABASE_URL).then((answer) => {
    if (answer === true) return TEST_DATABASE_URL
    postgresSeen = undefined
    if (answer === 'timeout') throw new Error(`Postgres at ${TEST_DATABASE_URL} neither took nor refused a connect within 30 s: is the machine overloaded?`)
    throw new Error(`Postgres is required at ${TEST_DATABASE_URL} (${answer}): start one with \`pg_ctlcluster 15 main start\` ` +
      '(Debian: apt-get install postgresql), or set TEST_DATABASE_URL; `bash .ci/run` does both')
  })
  return await postgresSeen
}

/**
 * An empty Postgres database for one test, its own until the test ends. Returns its URL.
 * Taken from a pool of reused databases, emptied when taken (postgres-pool.ts): creating
 * and dropping one cost seconds each time.
 */
export async function freshPostgresDatabase (scope: Scope): Promise<string> {
  return await takePooledDatabase(scope, await requirePostgres())
}

/**
 * The running Postgres as a test should talk to it: patient. The service's 5 s query timeout
 * and 2 s connect timeout are client-side timers, and a test process that imports an app or
 * loads PGlite beside other files of its group keeps its event loop busy for seconds on a
 * loaded 2-core machine: the timer then fires before the socket's answer is read, and a
 * migration that Postgres finished in milliseconds failed as "Query read timeout". What a
 * timeout does is the fault tests' subject (they set their own); elsewhere a slow backend
 * is waited for.
 */
export function patientPostgres (url: string): Database {
  return createPostgresDatabase({ connectionString: url, queryTimeoutMillis: 120_000, connectionTimeoutMillis: 60_000 })
}

/** Applies the service's migrations to the database at `url` (what `auth-token-service migrate` does). */
async function migrateDatabase (url: string): Promise<void> {
  const database = patientPostgres(url)
  try {
    await migrate(database)
  } finally {
    await database.close()
  }
}

/** A fresh Postgres database with the migrations applied (as compose's one-shot `migrate` leaves it); dropped at the end. */
export async function migratedDatabaseUrl (scope: Scope): Promise<string> {
  const url = await freshPostgresDatabase(scope)
  await migrateDatabase(url)
  return url
}

export interface ThrowawayPostgres {
  readonly port: number
  /** The service's database (`ats`), migrated by `migrate()`. */
  readonly url: string
  readonly running: boolean
  /** 'fast': SIGINT (pg_ctl stop -m fast); 'kill': SIGKILL of the postmaster. Resolves when it is gone. */
  stop (mode: 'fast' | 'kill'): Promise<void>
  /** Starts it again on the same port and data directory; resolves when it accepts connections. */
  start (): Promise<void>
}

/** Postgres refuses to run as root: run it as the `postgres` user when we are root. */
async function postgresOwner (): Promise<{ uid: number, gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined
  const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim())
  const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim())
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) throw new Error('running as root and no `postgres` user to run Postgres as')
  return { uid, gid }
}

async function canConnect (url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 })
  client.on('error', () => {})
  try {
    await client.connect()
    await client.query('SELECT 1')
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

export async function startThrowawayPostgres (scope: Scope): Promise<ThrowawayPostgres> {
  await run('initdb', ['--version']).catch(() => {
    throw new Error('initdb and postgres are required on PATH (Debian: apt-get install postgresql; /usr/lib/postgresql/<v>/bin)')
  })
  const owner = await postgresOwner()
  const dir = await tempDir(scope, 'ats-pg-', owner)
  const data = join(dir, 'data')
  const asOwner = owner === undefined ? {} : { uid: owner.uid, gid: owner.gid }
  await run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions'],
    { ...asOwner, cwd: dir, timeout: 60_000 })
  const port = await freePort()
  const adminUrl = `postgres://postgres@127.0.0.1:${port}/postgres`
  const url = `postgres://postgres@127.0.0.1:${port}/ats`
  const args = ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1',
    '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=50']
  let child: ChildProcess | undefined
  let log = ''

  const server: ThrowawayPostgres = {
    port,
    url,
    get running () { return child !== undefined && child.exitCode === null && child.signalCode === null },
    async stop (mode) {
      if (child !== undefined) await stopChild(child, mode === 'fast' ? 'SIGINT' : 'SIGKILL', 20_000)
    },
    async start () {
      if (server.running) throw new Error('postgres is already running')
      log = ''
      // SIGQUIT: immediate shutdown, the postmaster takes its backends with it.
      const started = spawnTracked('postgres', args, { ...asOwner, cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] }, 'SIGQUIT')
      started.stderr?.on('data', (chunk: Buffer) => { log = (log + chunk.toString()).slice(-20_000) })
      child = started
      try {
        await waitFor(`postgres :${port}`, async () => {
          if (started.exitCode !== null) throw new Error('exited')
          return await canConnect(adminUrl)
        }, { everyMs: 100 })
      } catch (error) {
        throw new Error(`postgres on :${port} did not start (${String(error)}):\n${log}`)
      }
    }
  }
  scope.teardown(async () => {
    if (child !== undefined) await stopChild(child, 'SIGQUIT')
  })
  await server.start()
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query('CREATE DATABASE ats')
  await admin.end()
  await migrateDatabase(url)
  return server
}
