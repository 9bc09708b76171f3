import t from 'tap'
import { execFile } from 'node:child_process'
import { tmpdir } from 'node:os'
import { migrate } from '../../../src/core/migrate.js'
import { freshPglite } from '../../support/pglite.js'
import { freshPostgresDatabase, patientPostgres } from '../../../support/postgres.js'
import { cliCommand } from '../../../support/service.js'

/*
 * Accounts stored before usernames had one canonical form: `migrate` renames each to its
 * canonical form when nobody else has it, and lists (never merges) those that would become one.
 */

const HASH = '$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$ZmFrZWhhc2hmYWtlaGFzaGZha2VoYXNoZmFrZWg'
const STORED = ['carol', 'Carol', 'CAROL ', 'Bob', 'ｄａｖｅ', 'erin\u200b', 'frank']

t.test('migrate renames what it can and reports collisions, untouched', async (t) => {
  const db = await freshPglite()
  t.teardown(async () => { await db.close() })
  for (const username of STORED) await db.query('INSERT INTO users (username, password_hash) VALUES ($1, $2)', [username, HASH])
  const { usernames } = await migrate(db)
  t.same(usernames.renamed.map(({ from, to }) => [from, to]), [['Bob', 'bob'], ['ｄａｖｅ', 'dave']])
  t.same(usernames.collisions.map(({ canonical, accounts }) => [canonical, accounts.map((a) => a.username)]), [['carol', ['carol', 'Carol']]])
  t.same(usernames.refused.map(({ username }) => username), ['CAROL ', 'erin\u200b'])
  const { rows } = await db.query<{ username: string }>('SELECT username FROM users ORDER BY id')
  t.same(rows.map((row) => row.username), ['carol', 'Carol', 'CAROL ', 'bob', 'dave', 'erin\u200b', 'frank'], 'colliding and refused accounts left as they were')
  t.same((await migrate(db)).usernames.renamed, [], 'a second run renames nothing more')
})

t.test('the migrate command lists the collisions and exits 1 until they are resolved', async (t) => {
  const url = await freshPostgresDatabase(t)
  const run = async (): Promise<{ code: number, stderr: string }> => await new Promise((resolve) => {
    execFile(...cliCommand(['migrate']), { env: { PATH: process.env.PATH ?? '', DATABASE_URL: url, LOG_LEVEL: 'silent' }, cwd: tmpdir(), encoding: 'utf8' },
      (error, _stdout, stderr) => { resolve({ code: error === null ? 0 : Number(error.code), stderr }) })
  })
  t.equal((await run()).code, 0, 'an empty database')
  const db = patientPostgres(url)
  t.teardown(async () => { await db.close() })
  for (const username of ['alice', 'Alice', 'Bob']) await db.query('INSERT INTO users (username, password_hash) VALUES ($1, $2)', [username, HASH])
  const refused = await run()
  t.equal(refused.code, 1)
  t.match(refused.stderr, /accounts 1 "alice", 2 "Alice" are all "alice" in canonical form: left as they are, not merged/)
  t.match(refused.stderr, /username of account 3 made canonical: "Bob" -> "bob"/)
  t.match(refused.stderr, /see docs\/security\.md, Canonical usernames/)
  // The operator keeps one: here the second is renamed.
  await db.query("UPDATE users SET username = 'alice2' WHERE username = 'Alice'")
  t.equal((await run()).code, 0, 'resolved')
})
