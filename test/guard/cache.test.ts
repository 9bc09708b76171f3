import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { hashToken } from '@auth-token-service/protocol/token'
import { buildGuardedApp, FEED_NOT_TTL_MS, guardOptions, MODES, startTokenService, tokenKey, untilRefused, warm } from './support.js'

for (const mode of MODES) {
  t.test(`${mode} mode`, async (t) => {
    t.test('a positive answer is reused: the key deleted behind the guard\'s back still passes', async (t) => {
      const service = await startTokenService(t)
      const { options, verifications } = guardOptions(t, service, mode, { cache: { maxEntries: 100, ttlMs: 60_000 } })
      const guarded = await buildGuardedApp(t, options)
      const token = await service.login()
      await warm(guarded, verifications, token)

      // No Logout, no message: only the cache can still say yes now.
      t.equal(await service.admin.del(tokenKey(service, token)), 1)
      const before = verifications.count()
      t.equal(await guarded.status(token), 200, 'the cache answered')
      t.equal(verifications.count(), before, 'without asking the token service')

      // The message a terminate publishes, alone, evicts it.
      const started = performance.now()
      await service.admin.publish(`${service.keyPrefix}revoked`, hashToken(token))
      const delay = await untilRefused(guarded, token, started)
      t.comment(`${mode}: a published revocation evicted the cached token in ${delay.toFixed(1)} ms`)
      t.ok(delay < FEED_NOT_TTL_MS, 'evicted by the message, not by the cache\'s expiry')
    })

    t.test('a real Logout of a cached token is refused', async (t) => {
      const service = await startTokenService(t)
      const { options, verifications } = guardOptions(t, service, mode, { cache: { maxEntries: 100, ttlMs: 60_000 } })
      const guarded = await buildGuardedApp(t, options)
      const delays: number[] = []
      for (let round = 0; round < 5; round++) {
        const token = await service.login()
        await warm(guarded, verifications, token)
        const started = performance.now()
        await service.logout(token)
        delays.push(await untilRefused(guarded, token, started))
      }
      t.comment(`${mode}: Logout to refusal of a cached token: ${delays.map((d) => d.toFixed(1)).join(', ')} ms (Logout's own round trip included)`)
      t.ok(Math.max(...delays) < FEED_NOT_TTL_MS, 'each by the feed, not by the cache\'s expiry')
    })

    t.test('sessions revoke (terminateAccount) evicts every cached token of the account', async (t) => {
      const service = await startTokenService(t)
      const { options, verifications } = guardOptions(t, service, mode, { cache: { maxEntries: 100, ttlMs: 60_000 } })
      const guarded = await buildGuardedApp(t, options)
      const tokens = [await service.login(), await service.login(), await service.login()]
      for (const token of tokens) await warm(guarded, verifications, token)
      const started = performance.now()
      const { ended } = await service.app.accounts.revokeSessions('ann')
      t.equal(ended, 3)
      const delays: number[] = []
      for (const token of tokens) delays.push(await untilRefused(guarded, token, started))
      t.comment(`${mode}: sessions revoke to refusal of 3 cached tokens: ${delays.map((d) => d.toFixed(1)).join(', ')} ms`)
      t.ok(Math.max(...delays) < FEED_NOT_TTL_MS, 'each by the feed, not by the cache\'s expiry')
    })

    t.test('a cached token is refused once it expires, though the cache would keep it longer', async (t) => {
      // 5 s, not 2: warming (the feed connecting, a first verification) took over 2 s at a load of 12.
      const service = await startTokenService(t, { tokenTtlSeconds: 5 })
      const { options, verifications } = guardOptions(t, service, mode, { cache: { maxEntries: 100, ttlMs: 60_000 } })
      const guarded = await buildGuardedApp(t, options)
      const login = await service.client.login('ann', 'correct horse battery staple')
      if (!login.ok) throw new Error('login failed')
      await warm(guarded, verifications, login.token)
      t.ok(Date.now() < login.expiresAt.getTime(), 'cached before its expiry')
      await sleep(login.expiresAt.getTime() - Date.now() + 50)
      t.equal(await guarded.status(login.token), 403, 'refused right after expiration_date')
    })

    t.test('the cache is bounded in time and in entries (least recently used out first)', async (t) => {
      const service = await startTokenService(t)
      const { options, verifications } = guardOptions(t, service, mode, { cache: { maxEntries: 2, ttlMs: 400 } })
      const guarded = await buildGuardedApp(t, options)
      const [a, b, c] = [await service.login(), await service.login(), await service.login()]
      await warm(guarded, verifications, a)
      await warm(guarded, verifications, b)
      t.equal(await guarded.status(a), 200, 'a is used again, so b is now the least recent')
      await warm(guarded, verifications, c)
      let before = verifications.count()
      t.equal(await guarded.status(a), 200)
      t.equal(verifications.count(), before, 'a is still cached')
      t.equal(await guarded.status(b), 200)
      t.equal(verifications.count(), before + 1, 'b was pushed out by c')

      await warm(guarded, verifications, a)
      await sleep(450)
      before = verifications.count()
      t.equal(await guarded.status(a), 200)
      t.equal(verifications.count(), before + 1, 'after ttlMs the answer is asked for again')
    })

    t.test('without a cache every request is verified', async (t) => {
      const service = await startTokenService(t)
      const { options, verifications } = guardOptions(t, service, mode)
      const guarded = await buildGuardedApp(t, options)
      const token = await service.login()
      for (let i = 0; i < 3; i++) t.equal(await guarded.status(token), 200)
      t.equal(verifications.count(), 3)
      await service.logout(token)
      t.equal(await guarded.status(token), 403, 'a Logout is seen at once')
    })
  })
}
