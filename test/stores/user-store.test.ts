import t, { type Test } from 'tap'
import { createPostgresDatabase } from '../../src/db/postgres.js'
import { migrate } from '../../src/core/migrate.js'
import type { Database } from '../../src/db/database.js'
import { createSqlUserStore } from '../../src/core/stores/user-store.js'
import { createSqlTotpStore } from '../../src/totp/store.js'
import { freshPostgresDatabase, patientPostgres } from '../../support/postgres.js'
import { rejection } from '../support/rejection.js'
import { freshPglite } from '../support/pglite.js'

type MakeDatabase = (t: Test) => Promise<Database>

/** One suite for both user databases: the same SQL must behave the same on Postgres and PGlite. */
function userStoreContract (t: Test, makeDatabase: MakeDatabase): void {
  const storeFor = async (t: Test) => {
    const db = await makeDatabase(t)
    t.teardown(async () => { await db.close() })
    await migrate(db)
    return { db, users: createSqlUserStore(db) }
  }

  t.test('create, find by exact username, list', async (t) => {
    const { users } = await storeFor(t)
    const ann = await users.create({ username: 'Ann', passwordHash: 'h1', federated: false })
    await users.create({ username: 'bob', passwordHash: 'h2', federated: true })
    t.match(ann, { username: 'Ann', passwordHash: 'h1', federated: false, disabled: false })
    t.type(ann.id, 'string')
    t.same(await users.findByUsername('Ann'), { ...ann, secondFactor: false }, 'the record, and no second factor')
    t.equal(await users.findByUsername('ann'), null, 'compared exactly: case kept')
    t.equal(await users.findByUsername('nobody'), null)
    t.same((await users.list()).map((u) => [u.username, u.federated]), [['Ann', false], ['bob', true]])
  })

  t.test('a page by name prefix (the admin console\'s find): keyset after a name, only names that begin with it, pattern characters as data', async (t) => {
    const { users } = await storeFor(t)
    for (const username of ['al', 'alex', 'alice', 'alina', 'bob', 'al_x', 'al%y']) await users.create({ username, passwordHash: 'h', federated: false })
    const names = async (after: string | undefined, limit: number, prefix?: string): Promise<string[]> => (await users.page(after, limit, prefix)).map((u) => u.username)
    t.same(await names(undefined, 10, 'ali'), ['alice', 'alina'])
    t.same(await names('alice', 10, 'ali'), ['alina'], 'after a name')
    t.same(await names(undefined, 2, 'al'), ['al', 'al%y'], 'a limit, in byte order')
    t.same(await names(undefined, 10, 'al_'), ['al_x'], '_ is a character, not a wildcard')
    t.same(await names(undefined, 10, 'al%'), ['al%y'], '% is a character, not a wildcard')
    t.same(await names(undefined, 10, 'zz'), [])
    t.same(await names(undefined, 10, ''), ['al', 'al%y', 'al_x', 'alex', 'alice', 'alina', 'bob'], 'an empty prefix: every account')
  })

  t.test("findByUsername (Login's read) says whether a second factor is active: waiting, confirmed, removed", async (t) => {
    const { db, users } = await storeFor(t)
    const factors = createSqlTotpStore(db)
    const ann = await users.create({ username: 'ann', passwordHash: 'h', federated: false })
    t.equal((await users.findByUsername('ann'))?.secondFactor, false, 'none')
    t.ok(await factors.begin(ann.id, 'sealed', ['code-hash']))
    t.equal((await users.findByUsername('ann'))?.secondFactor, false, 'waiting for its confirmation: not yet')
    t.ok(await factors.confirm(ann.id, 100))
    t.equal((await users.findByUsername('ann'))?.secondFactor, true, 'confirmed')
    t.equal((await users.details('ann'))?.totp, true, 'as the admin view says')
    t.ok(await factors.remove(ann.id))
    t.equal((await users.findByUsername('ann'))?.secondFactor, false, 'removed')
  })

  t.test('a taken username is a duplicate error value (409), not a driver error', async (t) => {
    const { users } = await storeFor(t)
    await users.create({ username: 'ann', passwordHash: 'h', federated: false })
    t.match(await rejection(users.create({ username: 'ann', passwordHash: 'x', federated: true })), { status: 409 })
  })

  t.test('usernames are stored as given (the service NFC-normalizes before)', async (t) => {
    const { users } = await storeFor(t)
    const nfc = 'Jos\u00e9'
    await users.create({ username: nfc, passwordHash: 'h', federated: false })
    t.ok(await users.findByUsername(nfc))
    t.equal(await users.findByUsername('Jose\u0301'), null, 'NFD form is another string to the store')
    t.ok(await users.create({ username: 'x'.repeat(256), passwordHash: 'h', federated: false }), '256 characters fit')
  })

  t.test('set password hash and disabled flag; unknown accounts give null', async (t) => {
    const { users } = await storeFor(t)
    await users.create({ username: 'ann', passwordHash: 'old', federated: false })
    t.match(await users.setPasswordHash('ann', 'new'), { passwordHash: 'new' })
    t.match(await users.setDisabled('ann', true), { disabled: true })
    t.match(await users.findByUsername('ann'), { passwordHash: 'new', disabled: true })
    t.match(await users.setDisabled('ann', false), { disabled: false })
    t.equal(await users.setPasswordHash('nobody', 'x'), null)
    t.equal(await users.setDisabled('nobody', true), null)
  })

  t.test('the revocation epoch rises with disable, a new password and revoke-all, never with a rehash or enable', async (t) => {
    const { users } = await storeFor(t)
    t.match(await users.create({ username: 'ann', passwordHash: 'h1', federated: false }), { tokenEpoch: 0 })
    t.match(await users.setPasswordHash('ann', 'h2'), { tokenEpoch: 1 }, 'a new password')
    t.match(await users.setDisabled('ann', true), { tokenEpoch: 2 }, 'disable')
    t.match(await users.setDisabled('ann', false), { tokenEpoch: 2 }, 'enable leaves it')
    t.match(await users.raiseTokenEpoch('ann'), { tokenEpoch: 3 }, 'revoke-all')
    await users.upgradePasswordHash('ann', 'h2', 'h2-rehashed')
    t.match(await users.findByUsername('ann'), { passwordHash: 'h2-rehashed', tokenEpoch: 3 }, 'a rehash keeps it')
    await users.upgradePasswordHash('ann', 'h2', 'stale-rehash')
    t.match(await users.findByUsername('ann'), { passwordHash: 'h2-rehashed' }, 'a rehash of a password changed meanwhile changes nothing')
    t.equal(await users.raiseTokenEpoch('nobody'), null)
  })

  t.test('migrations are idempotent', async (t) => {
    const { db } = await storeFor(t)
    t.same(await migrate(db), { applied: [], usernames: { renamed: [], collisions: [], refused: [] } }, 'a second run applies nothing, and renames nothing')
    const { rows } = await db.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY name')
    t.ok(rows.length >= 1)
    t.ok(rows.every((row) => /^\d+-[\w-]+\.sql$/.test(row.name)))
  })
}

t.test('Postgres user store', async (t) => {
  userStoreContract(t, async (t) => patientPostgres(await freshPostgresDatabase(t)))

  t.test('concurrent migrations of one database do not collide', async (t) => {
    const url = await freshPostgresDatabase(t)
    const dbs = [patientPostgres(url), patientPostgres(url), patientPostgres(url)]
    t.teardown(async () => { await Promise.all(dbs.map(async (db) => { await db.close() })) })
    const results = await Promise.all(dbs.map(async (db) => await migrate(db)))
    t.equal(results.filter((r) => r.applied.length > 0).length, 1, 'exactly one instance applied them')
  })

  t.test('an unreachable Postgres is a 503 error value, not a crash', async (t) => {
    const db = createPostgresDatabase({ connectionString: 'postgres://postgres@127.0.0.1:1/none', connectionTimeoutMillis: 500 })
    t.teardown(async () => { await db.close() })
    t.match(await rejection(createSqlUserStore(db).findByUsername('ann')), { status: 503 })
  })
})

t.test('PGlite user store', async (t) => {
  userStoreContract(t, async () => await freshPglite())

  t.test('an empty PGlite migrates from scratch', async (t) => {
    const db = await freshPglite({ migrated: false })
    t.teardown(async () => { await db.close() })
    const { applied } = await migrate(db)
    t.ok(applied.includes('001-users.sql'))
    t.same(await createSqlUserStore(db).list(), [])
  })
})
