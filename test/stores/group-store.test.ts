import t, { type Test } from 'tap'
import { migrate } from '../../src/core/migrate.js'
import type { Database } from '../../src/db/database.js'
import { createSqlGroupStore } from '../../src/core/stores/group-store.js'
import { createSqlUserStore } from '../../src/core/stores/user-store.js'
import { freshPostgresDatabase, patientPostgres } from '../../support/postgres.js'
import { freshPglite } from '../support/pglite.js'

type MakeDatabase = (t: Test) => Promise<Database>

/*
 * The group store on Postgres and PGlite. A federated Login hands the directory's set to it at
 * every Login, and that set is nearly always the one stored: then nothing is written — no lock on
 * the account's row, no UPDATE of it (its tuple, xmin and xmax, stays as it was) — and the answer
 * is the one a write would have given (unchanged, the same version and union).
 */
function groupStoreContract (t: Test, makeDatabase: MakeDatabase): void {
  const storeFor = async (t: Test) => {
    const db = await makeDatabase(t)
    t.teardown(async () => { await db.close() })
    await migrate(db)
    const users = createSqlUserStore(db)
    await users.create({ username: 'alice', passwordHash: null, federated: true })
    /** The account row's tuple: any UPDATE or row lock changes it. */
    const tuple = async (): Promise<string> => {
      const { rows } = await db.query<{ xmin: string, xmax: string }>('SELECT xmin::text AS xmin, xmax::text AS xmax FROM users WHERE username = $1', ['alice'])
      return JSON.stringify(rows[0])
    }
    return { groups: createSqlGroupStore(db), tuple }
  }

  t.test('the same set again writes nothing and answers as a write would', async (t) => {
    const { groups, tuple } = await storeFor(t)
    await groups.set('alice', 'local', ['mine'])
    const first = await groups.set('alice', 'directory', ['domain-admins', 'ops'])
    t.match(first, { username: 'alice', changed: true, before: ['mine'], after: ['domain-admins', 'mine', 'ops'] })
    const before = await tuple()

    const again = await groups.set('alice', 'directory', ['domain-admins', 'ops'])
    t.same(again, { ...first, before: first?.after, changed: false }, 'unchanged: the same version and union')
    t.equal(await tuple(), before, 'the account row neither locked nor rewritten')
    const local = await groups.set('alice', 'local', ['mine'])
    t.match(local, { changed: false, version: first?.version, after: ['domain-admins', 'mine', 'ops'] }, 'the local set alike')
    t.equal(await tuple(), before, 'nor by the same local set')

    const changed = await groups.set('alice', 'directory', ['ops'])
    t.match(changed, { changed: true, version: (first?.version ?? 0) + 1, before: ['domain-admins', 'mine', 'ops'], after: ['mine', 'ops'] }, 'a different set is still written, its version raised')
    t.not(await tuple(), before)
    t.match(await groups.set('alice', 'directory', []), { changed: true, after: ['mine'] }, 'emptied')
    t.match(await groups.set('alice', 'directory', []), { changed: false, after: ['mine'] }, 'and empty again: no change')
    t.equal(await groups.set('nobody', 'directory', ['ops']), null, 'no such account: null, as before')
    t.equal(await groups.set('nobody', 'directory', []), null, 'with an empty set too')
  })
}

t.test('Postgres group store', async (t) => {
  groupStoreContract(t, async (t) => patientPostgres(await freshPostgresDatabase(t)))
})

t.test('PGlite group store', async (t) => {
  groupStoreContract(t, async () => await freshPglite())
})
