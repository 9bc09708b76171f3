import { randomBytes } from 'node:crypto'
import pg from 'pg'
import t from 'tap'
import { ensureDatabase } from '../../src/db/create-database.js'
import { requirePostgres } from '../../support/postgres.js'

/*
 * `migrate` on a DATABASE_URL whose database does not exist yet (the README's
 * `…/auth` on a fresh Postgres): it creates it, once, and says so; on the running Postgres.
 */

const server = await requirePostgres()

function urlOf (name: string): string {
  const url = new URL(server)
  url.pathname = `/${encodeURIComponent(name)}`
  return url.toString()
}

async function exists (name: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: server })
  await client.connect()
  try {
    return (await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1
  } finally {
    await client.end()
  }
}

async function drop (name: string): Promise<void> {
  const client = new pg.Client({ connectionString: server })
  await client.connect()
  try {
    await client.query(`DROP DATABASE IF EXISTS "${name.replaceAll('"', '""')}" WITH (FORCE)`)
  } finally {
    await client.end()
  }
}

t.test('a missing database is created, then found', async (t) => {
  const name = `ats_create_${randomBytes(4).toString('hex')}`
  t.teardown(async () => { await drop(name) })
  t.notOk(await exists(name), 'not there before')
  t.same(await ensureDatabase(urlOf(name)), { created: true, name }, 'created')
  t.ok(await exists(name), 'there after')
  t.same(await ensureDatabase(urlOf(name)), { created: false, name }, 'a second time: found, not created')
})

t.test('a name that needs quoting is created as written', async (t) => {
  const name = `ats "Create" ${randomBytes(4).toString('hex')}`
  t.teardown(async () => { await drop(name) })
  t.same(await ensureDatabase(urlOf(name)), { created: true, name })
  t.ok(await exists(name), 'under its exact name')
})

t.test('two at once: one creates it, neither fails', async (t) => {
  const name = `ats_race_${randomBytes(4).toString('hex')}`
  t.teardown(async () => { await drop(name) })
  const both = await Promise.all([ensureDatabase(urlOf(name)), ensureDatabase(urlOf(name))])
  t.equal(both.filter((result) => result.created).length <= 1, true, 'at most one says it created it')
  t.ok(await exists(name))
})

t.test('a server that cannot be reached is an error, not a creation', async (t) => {
  await t.rejects(ensureDatabase('postgres://postgres@127.0.0.1:1/auth'), 'refused')
})
