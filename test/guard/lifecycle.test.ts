import Fastify from 'fastify'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { Redis } from 'ioredis'
import t from 'tap'
import { authTokenGuard, type AuthTokenGuardOptions } from '@auth-token-service/guard'
import { freshRedisPrefix, requireRedis } from '../../support/redis.js'
import { buildGuardedApp, eventually, guardOptions, startTokenService, warm, watcherIds } from './support.js'

t.test('a handed-in Redis client is used, never closed', async (t) => {
  const redis = new Redis(await requireRedis())
  t.teardown(() => { redis.disconnect() })
  const app = Fastify({ logger: false })
  await app.register(authTokenGuard, { redis, keyPrefix: await freshRedisPrefix(t), cache: { maxEntries: 10, ttlMs: 1000 } })
  app.get('/x', async () => 'ok')
  t.equal((await app.inject({ method: 'GET', url: '/x', query: { token: 'A'.repeat(43) } })).statusCode, 403)
  await app.close()
  t.equal(await redis.ping(), 'PONG')
})

t.test('what the guard opened is closed with the app: its revocation feed connection too', async (t) => {
  const url = await requireRedis()
  const keyPrefix = await freshRedisPrefix(t)
  const admin = new Redis(url)
  t.teardown(async () => { await admin.quit() })
  const app = Fastify({ logger: false })
  await app.register(authTokenGuard, { redisUrl: url, keyPrefix, cache: { maxEntries: 10, ttlMs: 1000 } })
  await app.ready()
  await eventually(async () => (await watcherIds(admin, keyPrefix)).length === 1, 5000, 'the feed connected')
  await app.close()
  await eventually(async () => (await watcherIds(admin, keyPrefix)).length === 0, 5000, 'the feed connection closed')
})

t.test('HTTP mode with an explicit revocationsUrl; closing the app ends its event stream', async (t) => {
  const service = await startTokenService(t)
  let streams = 0
  service.app.server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    if (request.url?.startsWith('/auth/revocations') !== true) return
    streams++
    response.once('close', () => { streams-- })
  })
  const { options, verifications } = guardOptions(t, service, 'http', {
    revocationsUrl: `${service.baseUrl}/auth/revocations`,
    cache: { maxEntries: 10, ttlMs: 60_000 }
  })
  const guarded = await buildGuardedApp(t, options)
  const token = await service.login()
  await warm(guarded, verifications, token)
  t.equal(streams, 1, 'the guard holds one event stream open')
  await guarded.app.close()
  await eventually(() => streams === 0, 5000, 'the event stream ended')
})

t.test('options are checked at registration', async (t) => {
  const cases: Array<[string, unknown]> = [
    ['no way to verify', {}],
    ['two ways to verify', { redisUrl: 'redis://127.0.0.1:6379', authenticateUrl: 'http://127.0.0.1:1/auth/Authenticate' }],
    ['a cache of no entries', { authenticateUrl: 'http://127.0.0.1:1/auth/Authenticate', cache: { maxEntries: 0, ttlMs: 1000 } }],
    ['a cache of no time', { authenticateUrl: 'http://127.0.0.1:1/auth/Authenticate', cache: { maxEntries: 10, ttlMs: -1 } }],
    ['a bad timeout', { authenticateUrl: 'http://127.0.0.1:1/auth/Authenticate', timeoutMs: Number.NaN }],
    ['a bad URL', { authenticateUrl: 'not a url' }]
  ]
  for (const [what, options] of cases) {
    const app = Fastify({ logger: false })
    await t.rejects(async () => { await app.register(authTokenGuard, options as AuthTokenGuardOptions) }, what)
    await app.close()
  }
})

t.test('guards in sibling scopes and nested scopes coexist; request.auth is null outside them', async (t) => {
  const service = await startTokenService(t)
  const token = await service.login()
  const app = Fastify({ logger: false })
  // Outside every guarded scope the decorator is absent (undefined), inside one it is null until set.
  app.get('/open', async (request) => ({ auth: request.auth ?? null }))
  for (const prefix of ['/a', '/b']) {
    await app.register(async (scope) => {
      await scope.register(authTokenGuard, { authenticateUrl: service.authenticateUrl })
      scope.get('/me', async (request) => ({ user: request.auth?.username }))
      await scope.register(async (inner) => {
        await inner.register(authTokenGuard, { redisUrl: service.redisUrl, keyPrefix: service.keyPrefix })
        inner.get('/inner', async (request) => ({ user: request.auth?.username }))
      })
    }, { prefix })
  }
  t.teardown(async () => { await app.close() })
  for (const url of ['/a/me', '/b/me', '/a/inner', '/b/inner']) {
    t.same((await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } })).json(), { user: 'ann' }, url)
    t.equal((await app.inject({ method: 'GET', url })).statusCode, 401, `${url} without a token`)
  }
  t.same((await app.inject({ method: 'GET', url: '/open' })).json(), { auth: null })
})
