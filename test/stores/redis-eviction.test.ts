import { Redis } from 'ioredis'
import t from 'tap'
import { generateToken, hashToken } from '@auth-token-service/protocol/token'
import { createRedisTokenStore } from '../../src/core/stores/redis/token-store.js'
import type { EvictionPolicyError } from '../../src/core/stores/redis/eviction.js'
import { buildTestApp } from '../support/app.js'
import { startThrowawayRedis } from '../../support/redis.js'
import { rejection } from '../support/rejection.js'

/*
 * On a Redis whose maxmemory-policy may evict keys, an evicted account index
 * made `user disable` end none of the account's tokens and evicted lockout keys lifted
 * locks. The service refuses to serve on such a Redis (503, readiness 503, one log line)
 * and serves again as soon as the policy is `noeviction`.
 */

const record = { accountId: '1', username: 'u', federated: false, expiresAt: Date.now() + 60_000 }
/** A token hash as the service makes them (a string of another shape is no token: the store never looks it up). */
const h1 = hashToken(generateToken('1'))

t.test('the token store refuses to issue and to find on an evicting Redis, and says why once', async (t) => {
  const server = await startThrowawayRedis(t)
  const admin = new Redis(server.url)
  t.teardown(async () => { await admin.quit() })
  await admin.config('SET', 'maxmemory-policy', 'allkeys-lru')
  const reported: EvictionPolicyError[] = []
  const store = createRedisTokenStore({ url: server.url, denyTtlMs: 1000, onEvictionPolicy: (error) => { reported.push(error) } })
  t.teardown(async () => { await store.close() })
  await store.ready()

  t.match(await rejection(store.ping()), { status: 503 }, 'the readiness ping fails')
  t.match(await rejection(store.issue(h1, record, 60_000)), { status: 503 }, 'no token is issued')
  t.match(await rejection(store.find(h1)), { status: 503 }, 'nothing is answered from it')
  t.equal(reported.length, 1, 'reported once')
  t.match(reported[0]?.message, /maxmemory-policy is "allkeys-lru".*noeviction/)

  await admin.config('SET', 'maxmemory-policy', 'volatile-lru')
  t.match(await rejection(store.ping()), { status: 503 }, 'volatile-* evicts our keys too: refused')

  await admin.config('SET', 'maxmemory-policy', 'noeviction')
  await store.ping()
  await store.issue(h1, record, 60_000)
  t.same(await store.find(h1), record, 'serves again once the policy is noeviction')
})

t.test('readiness answers 503 naming the policy, and Login answers 503, on an evicting Redis', async (t) => {
  const server = await startThrowawayRedis(t)
  const admin = new Redis(server.url)
  t.teardown(async () => { await admin.quit() })
  await admin.config('SET', 'maxmemory-policy', 'allkeys-lru')
  const { app, addUser } = await buildTestApp(t, 'real', {}, { redis: { kind: 'single', url: server.url } })
  await addUser('ann', 'ann secret password')

  const ready = await app.inject({ method: 'GET', url: '/health/ready' })
  t.equal(ready.statusCode, 503)
  t.match(ready.json(), { checks: { redis: 'evicting', postgres: 'ok' } })
  const login = await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'ann', password: 'ann secret password' } })
  t.equal(login.statusCode, 503, 'no token issued on a Redis that may evict it')

  await admin.config('SET', 'maxmemory-policy', 'noeviction')
  t.equal((await app.inject({ method: 'GET', url: '/health/ready' })).statusCode, 200, 'ready once the policy is noeviction')
  const again = await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'ann', password: 'ann secret password' } })
  t.equal(again.statusCode, 200)
})
