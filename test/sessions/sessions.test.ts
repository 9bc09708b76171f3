import t from 'tap'
import { migrate } from '../../src/core/migrate.js'
import { createMemoryTokenStore } from '../../src/core/stores/memory/token-store.js'
import { createRedisTokenStore } from '../../src/core/stores/redis/token-store.js'
import { freshPostgresDatabase, patientPostgres } from '../../support/postgres.js'
import { freshRedisPrefix, requireRedis } from '../../support/redis.js'
import { freshPglite } from '../support/pglite.js'
import { sessionsContract } from './sessions.contract.js'

t.test('embedded default: PGlite and the in-process token store', async (t) => {
  sessionsContract(t, async (t) => {
    const db = await freshPglite()
    const tokens = createMemoryTokenStore({ denyTtlMs: 60_000 })
    t.teardown(async () => { await tokens.close(); await db.close() })
    return { db, tokens }
  })
})

t.test('Postgres and Redis', async (t) => {
  const url = await requireRedis()
  sessionsContract(t, async (t) => {
    const db = patientPostgres(await freshPostgresDatabase(t))
    await migrate(db)
    const tokens = createRedisTokenStore({ url, keyPrefix: await freshRedisPrefix(t), denyTtlMs: 60_000 })
    await tokens.ready()
    t.teardown(async () => { await tokens.close(); await db.close() })
    return { db, tokens }
  })
})
