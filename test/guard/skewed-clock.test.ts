import { createServer } from 'node:http'
import { keyLayout, encodeRecord } from '@auth-token-service/protocol/layout'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis, type RedisKey } from 'ioredis'
import t from 'tap'
import { generateToken, hashToken } from '@auth-token-service/protocol/token'
import { formatExpirationDate } from '../../src/core/time.js'
import { freshRedisPrefix, requireRedis } from '../../support/redis.js'
import { buildGuardedApp, warm } from './support.js'

/*
 * A guard whose clock ran 60 s behind served an expired token for up to its
 * cache TTL, because a cached entry's end was the token's absolute expiry compared with the
 * guard's wall clock. Now the guard learns the remaining lifetime from the token's source
 * (the key's PTTL; `expiration_date` less the answer's `Date`) and counts it down on its own
 * monotonic clock. Here the token service's clock is 60 s ahead of the guard's.
 */

const SKEW_MS = 60_000
const cache = { maxEntries: 10, ttlMs: 120_000 }

t.test('direct mode: the cached entry ends with the key, not 60 s later', async (t) => {
  const url = await requireRedis()
  const keyPrefix = await freshRedisPrefix(t)
  // A handed-in client whose GETs are counted: a verification that left the guard.
  let count = 0
  const redis = new Redis(url)
  t.teardown(() => { redis.disconnect() })
  const get = redis.get.bind(redis)
  redis.get = (async (key: RedisKey) => { count++; return await get(key) }) as unknown as Redis['get']
  const guarded = await buildGuardedApp(t, { redis, keyPrefix, cache })

  // Issued by a service whose clock is 60 s ahead, with 2 s of life left: by the guard's clock, 62 s.
  const token = generateToken('1')
  const seededAt = performance.now()
  await redis.set(keyLayout(keyPrefix).tokenKey(hashToken(token)), encodeRecord({ accountId: '1', username: 'ann', federated: false, expiresAt: Date.now() + SKEW_MS + 2000 }), 'PX', 2000)
  await warm(guarded, { count: () => count }, token)
  await sleep(Math.max(0, seededAt + 2100 - performance.now()))
  t.equal(await guarded.status(token), 403, 'refused once its 2 s are over: the cache did not outlive the key')
})

t.test('HTTP mode: the cached entry ends by the service\'s clock, counted on the guard\'s', async (t) => {
  // A token service 60 s ahead: its `Date` and `expiration_date` say so. The token has 3 s left.
  let verifications = 0
  const expiresAt = Date.now() + SKEW_MS + 3000
  const server = createServer((request, response) => {
    const serviceNow = new Date(Date.now() + SKEW_MS)
    if (request.method === 'GET' && request.url === '/auth/revocations') {
      response.writeHead(200, { 'content-type': 'text/event-stream', date: serviceNow.toUTCString() })
      response.write('event: ready\ndata: \n\n')
      const beat = setInterval(() => { response.write('event: heartbeat\ndata: 800\n\n') }, 100)
      response.on('close', () => { clearInterval(beat) })
      return
    }
    request.resume()
    request.on('end', () => {
      verifications++
      response.writeHead(200, { 'content-type': 'application/json', date: serviceNow.toUTCString() })
      response.end(JSON.stringify({ status: 0, message: 'Success', expiration_date: formatExpirationDate(expiresAt), account_id: '1', username: 'ann', federated: false }))
    })
  })
  await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
  t.teardown(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => { server.close(resolve) })
  })
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const started = performance.now()
  const guarded = await buildGuardedApp(t, { authenticateUrl: `${baseUrl}/auth/Authenticate`, cache })
  const token = generateToken('1')
  await warm(guarded, { count: () => verifications }, token)
  const before = verifications
  await sleep(Math.max(0, started + 3100 - performance.now()))
  t.equal(await guarded.status(token), 200, 'the stand-in still says yes')
  t.equal(verifications, before + 1, 'but asked again: the cached answer ended with the token\'s 3 s, not 63 s later')
})
