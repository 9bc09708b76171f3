import t from 'tap'
import { buildGuardedApp, eventually, guardOptions, MODES, startTokenService, tokenKey, untilRefused, warm, watcherIds } from './support.js'

/*
 * The catch-up: a guard whose revocation feed was cut may have missed revocations,
 * so it drops its cache and trusts nothing cached until the feed is live again.
 * In direct mode the guard's own subscriber connection is cut; in HTTP mode the
 * token service's subscriber is cut, which ends the guard's event stream.
 */

for (const mode of MODES) {
  t.test(`${mode} mode: a token revoked while the feed was cut is refused once the guard is back`, async (t) => {
    const service = await startTokenService(t)
    const { options, verifications } = guardOptions(t, service, mode, { cache: { maxEntries: 100, ttlMs: 60_000 } })
    const guarded = await buildGuardedApp(t, options)
    const [missed, other] = [await service.login(), await service.login()]
    await warm(guarded, verifications, missed)
    // The service's feed, plus the guard's own in direct mode.
    const feeds = mode === 'direct' ? 2 : 1
    await eventually(async () => (await watcherIds(service.admin, service.keyPrefix)).length === feeds, 5000, 'every feed connected')
    const cut = await watcherIds(service.admin, service.keyPrefix)

    // Cut every feed and end the token in one atomic step, publishing nothing: whatever
    // message there might have been, no feed could have heard it.
    const started = performance.now()
    const multi = service.admin.multi()
    for (const id of cut) multi.client('KILL', 'ID', id)
    multi.del(tokenKey(service, missed))
    const results = await multi.exec()
    t.same(results?.map(([error, value]) => [error, value]), [...cut.map(() => [null, 1]), [null, 1]], 'the feeds were cut and the key deleted together')

    await eventually(async () => {
      const now = await watcherIds(service.admin, service.keyPrefix)
      return now.length === feeds && now.every((id) => !cut.includes(id))
    }, 5000, 'the feeds reconnected')
    // Caching again (a hit needs a live feed): the guard is back.
    await warm(guarded, verifications, other)
    const back = performance.now() - started
    t.equal(await guarded.status(missed), 403, 'the token ended during the cut is refused: the cache was dropped')
    t.comment(`${mode}: cut to caching again: ${back.toFixed(0)} ms`)
  })

  t.test(`${mode} mode: a real Logout right after the cut is refused too`, async (t) => {
    const service = await startTokenService(t)
    const { options, verifications } = guardOptions(t, service, mode, { cache: { maxEntries: 100, ttlMs: 60_000 } })
    const guarded = await buildGuardedApp(t, options)
    const token = await service.login()
    await warm(guarded, verifications, token)
    const feeds = mode === 'direct' ? 2 : 1
    await eventually(async () => (await watcherIds(service.admin, service.keyPrefix)).length === feeds, 5000, 'every feed connected')
    const cut = await watcherIds(service.admin, service.keyPrefix)
    for (const id of cut) await service.admin.client('KILL', 'ID', id)
    const started = performance.now()
    // The subscriber waits at least 100 ms before reconnecting: this Logout's message is very likely lost.
    await service.logout(token)
    const stillCut = (await watcherIds(service.admin, service.keyPrefix)).length < feeds
    t.comment(`${mode}: the Logout ${stillCut ? 'happened while a feed was still cut' : 'came after the feeds were back'}`)
    const delay = await untilRefused(guarded, token, started)
    t.comment(`${mode}: Logout during a cut to refusal: ${delay.toFixed(1)} ms`)
    t.ok(delay < 1000)
  })
}
