import { Redis } from 'ioredis'
import t from 'tap'
import { generateToken, hashToken } from '@auth-token-service/protocol/token'
import { createRedisTokenStore } from '../../src/core/stores/redis/token-store.js'
import { LossyPersistenceError, type Persistence } from '../../src/core/stores/redis/persistence.js'
import { UnavailableError } from '../../src/errors/status.js'
import { buildTestApp } from '../support/app.js'
import { startThrowawayRedis } from '../../support/redis.js'
import { rejection } from '../support/rejection.js'

/*
 * A Redis that restarts from a state older than the last acknowledged Logout (a
 * snapshot, an AOF whose last second never reached the disk) brings logged-out tokens back.
 * The store reads Redis's persistence and refuses every token operation (503, readiness
 * "lossy") on one that can, unless the operator accepts it; AOF with `appendfsync always` and
 * no persistence at all (a restart comes back empty) are served.
 */

const record = { accountId: '1', username: 'u', federated: false, expiresAt: Date.now() + 60_000 }
/** Token hashes as the service makes them (a string of another shape is no token: the store never looks it up). */
const [h1, h2] = [hashToken(generateToken('1')), hashToken(generateToken('1'))]

t.test('the token store reads the persistence of its Redis, refuses the settings that can undo a revocation, and serves the others', async (t) => {
  const server = await startThrowawayRedis(t, { args: ['--save', '3600 1'] })
  const admin = new Redis(server.url)
  t.teardown(async () => { await admin.quit() })
  const changes: Array<[Persistence, LossyPersistenceError | undefined]> = []
  const store = createRedisTokenStore({ url: server.url, denyTtlMs: 1000, onPersistence: (persistence, refused) => { changes.push([persistence, refused]) } })
  t.teardown(async () => { await store.close() })
  await store.ready()

  t.match(await store.persistence(), { durability: 'lossy', settings: 'save "3600 1", appendonly no', canLose: /since the last snapshot/ }, 'snapshots only: lossy')
  const refused = await rejection(store.ping())
  t.match(refused, { status: 503 }, 'the readiness ping fails')
  t.ok(refused instanceof UnavailableError && refused.cause instanceof LossyPersistenceError, 'because of the persistence')
  t.match(await rejection(store.issue(h1, record, 60_000)), { status: 503 }, 'no token is issued')
  t.match(await rejection(store.find(h1)), { status: 503 }, 'none is found')
  t.match(await rejection(store.terminate(h1)), { status: 503 }, 'no Logout is acknowledged that a restart could undo')
  t.match(await rejection(store.terminateAccount('1')), { status: 503 }, 'nor a revoke-all')

  const steps: Array<[string, string, string, Persistence['durability']]> = [
    ['appendfsync', 'everysec', 'snapshots, and AOF off', 'lossy'],
    ['appendonly', 'yes', 'AOF, appendfsync everysec (the default): a host crash loses about a second', 'lossy'],
    ['appendfsync', 'no', 'AOF, appendfsync no', 'lossy'],
    ['appendfsync', 'always', 'AOF, appendfsync always', 'durable'],
    ['no-appendfsync-on-rewrite', 'yes', 'fsync skipped during rewrites', 'lossy'],
    ['no-appendfsync-on-rewrite', 'no', 'AOF, appendfsync always again', 'durable']
  ]
  for (const [name, value, what, durability] of steps) {
    await admin.config('SET', name, value)
    t.equal((await store.persistence()).durability, durability, `${what}: ${durability}`)
  }
  await store.ping()
  t.equal(await store.issue(h1, record, 60_000), true, 'AOF with appendfsync always: served')
  t.ok(await store.terminate(h1), 'and a Logout acknowledged')

  await admin.config('SET', 'appendonly', 'no')
  await admin.config('SET', 'save', '')
  t.match(await store.persistence(), { durability: 'none', canLose: /every token on a restart/ }, 'no persistence at all: a restart comes back empty')
  await store.ping()
  t.equal(await store.issue(h2, record, 60_000), true, 'served: no ended token can come back from nothing')
  t.ok(changes.length >= 6, `each change of settings told (${changes.length})`)
  t.ok(changes.some(([persistence, error]) => persistence.durability === 'lossy' && error?.message.includes('appendfsync always')), 'a lossy one with the fix in its message')
})

t.test('with the risk accepted (AUTH_REDIS_ACCEPT_LOSSY_PERSISTENCE), a snapshot-only Redis is served and still named lossy', async (t) => {
  const server = await startThrowawayRedis(t, { args: ['--save', '3600 1'] })
  const store = createRedisTokenStore({ url: server.url, denyTtlMs: 1000, acceptLossyPersistence: true })
  t.teardown(async () => { await store.close() })
  await store.ready()
  await store.ping()
  t.equal(await store.issue(h1, record, 60_000), true)
  t.ok(await store.terminate(h1))
  t.equal(store.lastPersistence?.durability, 'lossy')
})

t.test('a guard (reads only, requireNoEviction off) does not check persistence', async (t) => {
  const server = await startThrowawayRedis(t, { args: ['--save', '3600 1'] })
  const store = createRedisTokenStore({ url: server.url, denyTtlMs: 1000, requireNoEviction: false })
  t.teardown(async () => { await store.close() })
  await store.ready()
  await store.ping()
  t.equal(await store.find(h1), null)
  t.equal(store.lastPersistence, undefined)
})

t.test('readiness answers 503 "lossy" and says what Redis can lose; Login answers 503', async (t) => {
  const server = await startThrowawayRedis(t, { args: ['--appendonly', 'yes', '--appendfsync', 'everysec'] })
  const admin = new Redis(server.url)
  t.teardown(async () => { await admin.quit() })
  const { app, addUser } = await buildTestApp(t, 'real', {}, { redis: { kind: 'single', url: server.url } })
  await addUser('ann', 'ann secret password')
  const ready = await app.inject({ method: 'GET', url: '/health/ready' })
  t.equal(ready.statusCode, 503)
  t.same(ready.json(), {
    status: 503,
    message: 'Service Unavailable',
    checks: { redis: 'lossy', postgres: 'ok', accepting: 'yes' },
    durability: { redis: 'about the last second of writes on a host crash, Logouts included (appendonly yes, appendfsync everysec)' }
  })
  const login = await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'ann', password: 'ann secret password' } })
  t.equal(login.statusCode, 503, 'no token issued on a Redis that could bring ended ones back')

  await admin.config('SET', 'appendfsync', 'always')
  const again = await app.inject({ method: 'GET', url: '/health/ready' })
  t.equal(again.statusCode, 200, 'ready once appendfsync is always')
  t.match(again.json(), { durability: { redis: 'no acknowledged write (appendonly yes, appendfsync always)' } })
  t.equal((await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'ann', password: 'ann secret password' } })).statusCode, 200)
})
