import t from 'tap'
import Fastify from 'fastify'
import { Redis } from 'ioredis'
import { setTimeout as sleep } from 'node:timers/promises'
import { authTokenGuard } from '@auth-token-service/guard'
import { idleSlackMs, keyLayout, type TokenRecord } from '@auth-token-service/protocol/layout'
import { generateToken, hashToken } from '@auth-token-service/protocol/token'
import { createMemoryTokenStore } from '../../src/core/stores/memory/token-store.js'
import { createIdleTracking } from '../../src/core/stores/redis/idle.js'
import { buildTestApp } from '../support/app.js'
import { freshRedisPrefix, requireRedis } from '../../support/redis.js'

/*
 * AUTH_IDLE_TIMEOUT_SECONDS: a Login token not presented for that long stops working
 * (within a minute of the limit; never before it), on the service and through a direct-mode
 * guard; the absolute lifetime still applies; API keys have no idle timeout.
 */

const PASSWORD = 'a long enough passphrase 1'
const record = (accountId = '7'): TokenRecord => ({ accountId, username: 'ivy', federated: false, expiresAt: Date.now() + 3_600_000 })

t.test('fake clock, in-process store: refused exactly at the timeout after the last presentation', async (t) => {
  let clock = 0
  const store = createMemoryTokenStore({ denyTtlMs: 1000, idleTimeoutMs: 900_000, now: () => clock })
  const hash = hashToken(generateToken('7'))
  await store.issue(hash, record(), 3_600_000)
  clock = 899_999
  t.ok(await store.find(hash), 'presented just before the timeout: active')
  clock += 899_999
  t.ok(await store.find(hash), 'and again: the timeout counts from the last presentation (past the first timeout since issue)')
  t.ok(await store.refresh(hash, record(), 3_600_000), 'a Login refreshes an active token')
  clock += 899_000
  t.ok(await store.find(hash, true), 'a peek (the sessions list) sees it ...')
  clock += 1000
  t.equal(await store.find(hash), null, '... without keeping it from going idle: refused at the timeout')
  t.notOk(await store.refresh(hash, record(), 3_600_000), 'an idle token is not refreshed (the Login issues a new one)')
  const key = hashToken(generateToken('8'))
  await store.seedKey(key, { ...record('8'), keyId: 'k1' }, 3_600_000)
  clock += 2_000_000
  t.ok(await store.find(key), 'an API key has no idle timeout')
})

t.test('fake clock, Redis: the idle key is touched at most once per slack per token', async (t) => {
  const redisUrl = await requireRedis()
  const redis = new Redis(redisUrl)
  t.teardown(() => { redis.disconnect() })
  const prefix = await freshRedisPrefix(t)
  const keys = keyLayout(prefix)
  let clock = 0
  const idle = createIdleTracking({ redis, keys, idleTimeoutMs: 600_000, onCommandError: undefined, expireOnRead: true, now: () => clock })
  const token = generateToken('7')
  const hash = hashToken(token)
  await redis.set(keys.tokenKey(hash), `${Date.now() + 3_600_000}|0|7|ivy`, 'PX', 3_600_000)
  t.equal(await idle.find(hash), null, 'no idle key: refused')
  await idle.arm(hash)
  const idleKey = keys.idleKeyOf(hash) ?? ''
  const life = 600_000 + idleSlackMs(600_000)
  t.ok(Math.abs(await redis.pttl(idleKey) - life) < 2000, `armed for the timeout + slack (${life} ms)`)
  await redis.pexpire(idleKey, 100_000)
  t.ok(await idle.find(hash), 'armed: active')
  await sleep(20)
  t.ok(await redis.pttl(idleKey) <= 100_000, 'within the slack of the arm: not touched')
  clock += idleSlackMs(600_000)
  for (let i = 0; i < 5; i++) t.ok(await idle.find(hash))
  await sleep(20)
  t.ok(await redis.pttl(idleKey) > 100_000, 'a slack later: touched back to the full life')
  await redis.pexpire(idleKey, 100_000)
  for (let i = 0; i < 5; i++) t.ok(await idle.find(hash))
  await sleep(20)
  t.ok(await redis.pttl(idleKey) <= 100_000, 'and not again within the next slack, however often presented')
  clock += idleSlackMs(600_000)
  await redis.pexpire(idleKey, 100_000)
  t.ok(await idle.find(hash, true), 'a peek finds it')
  await sleep(20)
  t.ok(await redis.pttl(idleKey) <= 100_000, 'and touches nothing, though a slack has passed')
  t.ok(await idle.alive(hash))
  await redis.del(idleKey)
  t.equal(await idle.find(hash), null, 'idle key gone: refused')
  t.notOk(await idle.alive(hash), 'not alive: a Login will not refresh it')
})

t.test('real time, 2 s: the service, /auth/verify and a direct-mode guard refuse an idle token; presented in time it outlives the timeout', async (t) => {
  const service = await buildTestApp(t, 'real', { idleTimeoutSeconds: 2, tokenTtlSeconds: 60 })
  const { app } = service
  await service.addUser('ivy', PASSWORD)
  const guarded = Fastify()
  await guarded.register(authTokenGuard, { redisUrl: await requireRedis(), keyPrefix: service.config.redisKeyPrefix, idleTimeout: true })
  guarded.get('/orders', async () => ({ ok: true }))
  t.teardown(async () => { await guarded.close() })
  const login = async (): Promise<string> => String((await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'ivy', password: PASSWORD } })).json().token)
  const authenticate = async (token: string): Promise<number> => (await app.inject({ method: 'GET', url: `/auth/Authenticate?token=${token}` })).statusCode
  const verify = async (token: string): Promise<number> => (await app.inject({ method: 'GET', url: '/auth/verify', headers: { authorization: `Bearer ${token}` } })).statusCode
  const throughGuard = async (token: string): Promise<number> => (await guarded.inject({ method: 'GET', url: '/orders', headers: { authorization: `Bearer ${token}` } })).statusCode

  const kept = await login()
  const left = await login()
  const started = Date.now()
  for (let i = 0; i < 4; i++) {
    t.equal(await authenticate(kept), 200, `presented every second: active at ${Date.now() - started} ms`)
    t.equal(await throughGuard(kept), 200, 'through the guard too')
    await sleep(1000)
  }
  t.ok(Date.now() - started > 3500, 'kept past the 2 s timeout by being presented')
  t.equal(await authenticate(kept), 200, 'still active')
  t.equal(await authenticate(left), 403, 'the token left alone for over 2 s + slack: refused by Authenticate')
  t.equal(await verify(left), 401, '... by /auth/verify')
  t.equal(await throughGuard(left), 403, '... and by the direct-mode guard')
  await sleep(2000 + idleSlackMs(2000) + 100)
  t.equal(await throughGuard(kept), 403, 'the kept one, idle now: refused by the guard')
  t.equal(await authenticate(kept), 403, '... and by Authenticate')
})

t.test('the absolute lifetime still applies while the token is presented', async (t) => {
  // A 3 s life and a 3 s idle timeout. The instants come from the token's own expiration_date,
  // not from when the Login was sent: on a loaded machine the Login's hash alone took over a
  // second, and a token issued that late was still alive at "3.2 s after the request".
  const service = await buildTestApp(t, 'embedded', { idleTimeoutSeconds: 3, tokenTtlSeconds: 3 })
  await service.addUser('ivy', PASSWORD)
  const login = (await service.app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'ivy', password: PASSWORD } })).json<{ token: string, expiration_date: string }>()
  const token = login.token
  const expiresAt = Date.parse(`${login.expiration_date}Z`)
  t.equal((await service.app.inject({ method: 'GET', url: `/auth/Authenticate?token=${token}` })).statusCode, 200)
  await sleep(Math.max(0, expiresAt - 800 - Date.now()))
  t.equal((await service.app.inject({ method: 'GET', url: `/auth/Authenticate?token=${token}` })).statusCode, 200, 'presented 0.8 s before its expiry: active')
  await sleep(Math.max(0, expiresAt + 200 - Date.now()))
  t.equal((await service.app.inject({ method: 'GET', url: `/auth/Authenticate?token=${token}` })).statusCode, 403, 'past its life, though presented a second ago (well within the idle timeout)')
})

t.test('off by default: no idle key is written', async (t) => {
  const service = await buildTestApp(t, 'real')
  await service.addUser('ivy', PASSWORD)
  const token = String((await service.app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'ivy', password: PASSWORD } })).json().token)
  const redis = new Redis(await requireRedis())
  t.teardown(() => { redis.disconnect() })
  const idleKey = keyLayout(service.config.redisKeyPrefix).idleKeyOf(hashToken(token)) ?? ''
  t.equal(await redis.exists(idleKey), 0, 'no idle key')
  t.equal((await service.app.inject({ method: 'GET', url: `/auth/Authenticate?token=${token}` })).statusCode, 200)
})
