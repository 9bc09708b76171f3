import t from 'tap'
import { buildInternalApp } from '../../src/app/internal-listener.js'
import { buildGuardedApp, FEED_NOT_TTL_MS, guardOptions, MODES, startTokenService, untilRefused, warm } from './support.js'

/*
 * The guard, in both modes, takes an API key (`atsk_…`) where it takes a token (never
 * from the cookie), caches it as a token, and drops it when the key is ended: the revocation feed
 * carries the key's hash as it carries a token's.
 */

const ADMIN_KEY = 'admin-key-for-guard-key-tests-0123456789'

for (const mode of MODES) {
  t.test(`${mode} mode: an API key passes, is cached, and is refused soon after DELETE /admin/keys/{id}`, async (t) => {
    const service = await startTokenService(t, { adminKey: ADMIN_KEY })
    const internal = await buildInternalApp(service.app, service.config)
    t.teardown(async () => { await internal.close() })
    const made = await internal.inject({
      method: 'POST',
      url: '/admin/users/ann/keys',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'guard' })
    })
    t.equal(made.statusCode, 200, 'key made')
    const { key, secret } = made.json<{ key: { id: string }, secret: string }>()
    t.match(secret, /^atsk_/)

    const { options, verifications } = guardOptions(t, service, mode, { cache: { maxEntries: 100, ttlMs: 60_000 } })
    const guarded = await buildGuardedApp(t, options)
    const token = await service.login()

    const whoami = await guarded.app.inject({ method: 'GET', url: '/whoami', headers: { authorization: `Bearer ${secret}` } })
    t.equal(whoami.statusCode, 200, 'the key as Bearer passes')
    t.match(whoami.json(), { auth: { username: 'ann', keyId: key.id, federated: false } }, 'request.auth names the account and the key')
    const asToken = await guarded.app.inject({ method: 'GET', url: '/whoami', headers: { authorization: `Bearer ${token}` } })
    t.notOk('keyId' in (asToken.json<{ auth: Record<string, unknown> }>().auth), 'a Login token has no keyId')

    const asCookie = await guarded.app.inject({ method: 'GET', url: '/whoami', headers: { cookie: `AuthToken1=${secret}` } })
    t.equal(asCookie.statusCode, 401, 'the key as the cookie is no token')

    await warm(guarded, verifications, secret)
    const before = verifications.count()
    t.equal(await guarded.status(secret), 200)
    t.equal(verifications.count(), before, 'answered from the cache')

    const started = performance.now()
    const ended = await internal.inject({ method: 'DELETE', url: `/admin/keys/${key.id}`, headers: { authorization: `Bearer ${ADMIN_KEY}` } })
    t.equal(ended.statusCode, 200, 'key ended')
    const delay = await untilRefused(guarded, secret, started)
    t.comment(`${mode}: DELETE /admin/keys/{id} to refusal of a cached key: ${delay.toFixed(1)} ms`)
    t.ok(delay < FEED_NOT_TTL_MS, 'refused by the feed, not by the cache\'s expiry')
    t.equal(await guarded.status(token), 200, 'the account\'s Login token still passes')
  })
}
