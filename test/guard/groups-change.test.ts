import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import type { BackendKind } from '../support/app.js'
import { askThroughChange, buildGuardedApp, describeChange, FEED_NOT_TTL_MS, judgeChange, opsRoute, opsStatus, startGroupsService, warm, whoami, type GuardMode } from './support.js'

/*
 * A membership change made by an operator reaches a guard with its cache on (api-contract,
 * "Groups and access rules"): the real service, the admin API's PUT, and a route ruled to ops.
 * The service rewrites the account's live records and announces their hashes on the revocation
 * feed, so a cached answer never outlives the change by more than the feed takes. Here the order
 * of things is judged (cached before, the rule's 403 after, never a 200 once refused) with the
 * fast suite's margin; test/integration/timing/guard-groups-change.test.ts judges the 1 s.
 */

const cache = { maxEntries: 100, ttlMs: 60_000 }
const CASES: ReadonlyArray<{ kind: BackendKind, mode: GuardMode }> = [
  { kind: 'real', mode: 'direct' },
  { kind: 'real', mode: 'http' },
  { kind: 'embedded', mode: 'http' }
]

for (const { kind, mode } of CASES) {
  const name = `${mode} mode, ${kind === 'real' ? 'Postgres and Redis' : 'the embedded default'}`

  t.test(`${name}: in ops passes from the cache; removed, refused; added back, passes`, async (t) => {
    const service = await startGroupsService(t, kind)
    await service.setGroups(['ops'])
    const { options, verifications } = service.guardOptions(mode, { cache })
    const guarded = await buildGuardedApp(t, options, opsRoute)
    const token = await service.login()
    await warm(guarded, verifications, token)
    let before = verifications.count()
    t.equal(await opsStatus(guarded, token), 200, 'in ops: /ops passes')
    t.equal(verifications.count(), before, 'answered from the cache')

    await service.setGroups([])
    const removed = await askThroughChange(guarded, token, async () => {}, 403)
    judgeChange(t, removed, FEED_NOT_TTL_MS, 'removed')
    t.same(await whoami(guarded, token), { status: 200, groups: [] }, 'the token lives on: the 403 is the rule\'s')
    await warm(guarded, verifications, token)
    before = verifications.count()
    t.equal(await opsStatus(guarded, token), 403, 'refused by the cached new set')
    t.equal(verifications.count(), before, 'without a verification')

    await service.setGroups(['ops'])
    const added = await askThroughChange(guarded, token, async () => {}, 200)
    judgeChange(t, added, FEED_NOT_TTL_MS, 'added back')
    t.same(await whoami(guarded, token), { status: 200, groups: ['ops'] })
    await warm(guarded, verifications, token)
    before = verifications.count()
    t.equal(await opsStatus(guarded, token), 200, 'passes from the cache again')
    t.equal(verifications.count(), before, 'without a verification')
    t.comment(`${name}, asked after the PUT: removed: ${describeChange(removed)}; added: ${describeChange(added)}`)
  })

  t.test(`${name}: removed from ops while its cached pass is being served`, async (t) => {
    const service = await startGroupsService(t, kind)
    await service.setGroups(['ops', 'dev'])
    const { options, verifications } = service.guardOptions(mode, { cache })
    const guarded = await buildGuardedApp(t, options, opsRoute)
    const token = await service.login()
    const removed = await askThroughChange(guarded, token, async () => {
      await sleep(50)
      // A pass answered from the cache right before the PUT is sent: the one being served is the cached one.
      await warm(guarded, verifications, token)
      await service.setGroups(['dev'])
    }, 403)
    judgeChange(t, removed, FEED_NOT_TTL_MS, 'removed while hot')
    const passes = removed.answers.filter((answer) => answer.status === 200).length
    t.ok(passes > 1, `the cached pass was being served when the PUT was sent (${passes} passes)`)
    t.same(await whoami(guarded, token), { status: 200, groups: ['dev'] }, 'the token lives on, in dev')
    t.comment(`${name}, asked through the PUT: ${describeChange(removed)}`)
  })
}
