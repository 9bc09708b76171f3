import t from 'tap'
import { requireRedis } from '../../support/redis.js'
import { buildGuardedApp, FEED_NOT_TTL_MS, httpGuardOptions, untilRefused, warm, type VerificationCounter } from '../guard/support.js'
import { Redis } from 'ioredis'
import { setUp, signedInTokens, signOut } from './support.js'
import type { AuthTokenGuardOptions } from '@auth-token-service/guard'

/*
 * The guard takes the provider's access tokens (api-contract, Single sign-on: "the guard accepts
 * it"), in each mode with its cache on: request.auth names the client; and a sign-out at the
 * service ends the token in a guard's cache through the revocation feed, not at the cache's expiry.
 */

t.test('a guard in each mode, cache on: request.auth.clientId, and a sign-out ends the cached answer through the feed', async (t) => {
  const flow = await setUp(t, 'real', { overrides: { host: '127.0.0.1', publicInternals: true } })
  const { tokens, jar } = await signedInTokens(flow)
  const direct = async (): Promise<{ options: AuthTokenGuardOptions, verifications: VerificationCounter }> => {
    const redis = new Redis(await requireRedis())
    t.teardown(() => { redis.disconnect() })
    let count = 0
    const get = redis.get.bind(redis)
    redis.get = (async (key: string) => { count++; return await get(key) }) as unknown as Redis['get']
    return { options: { redis, keyPrefix: flow.testApp.redisPrefix ?? '', cache: { maxEntries: 100, ttlMs: 60_000 } }, verifications: { count: () => count } }
  }
  const modes = {
    direct: await direct(),
    http: httpGuardOptions(`${flow.base}/auth/Authenticate`, { cache: { maxEntries: 100, ttlMs: 60_000 } })
  }
  const guards = await Promise.all(Object.entries(modes).map(async ([mode, { options, verifications }]) => ({ mode, verifications, guarded: await buildGuardedApp(t, options) })))
  for (const { mode, guarded, verifications } of guards) {
    const answer = await guarded.app.inject({ method: 'GET', url: '/whoami', headers: { authorization: `Bearer ${tokens.access_token}` } })
    t.equal(answer.statusCode, 200, `${mode}: the access token passes`)
    t.match(answer.json(), { auth: { username: 'alice', clientId: flow.clientId, groups: ['ops'] } }, `${mode}: request.auth names the client`)
    await warm(guarded, verifications, tokens.access_token)
  }
  const since = performance.now()
  const out = await signOut(flow.base, jar)
  t.ok(out.status < 400, 'signed out at the service')
  for (const { mode, guarded } of guards) {
    const took = await untilRefused(guarded, tokens.access_token, since)
    t.ok(took < FEED_NOT_TTL_MS, `${mode}: refused ${took.toFixed(0)} ms after the sign-out began (the feed, not the cache's 60 s)`)
  }
})
