import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import type { BackendKind } from '../../support/app.js'
import { askThroughChange, buildGuardedApp, describeChange, judgeChange, opsRoute, startGroupsService, warm, type ChangeSeen, type GuardMode } from '../../guard/support.js'

/*
 * A membership change takes effect at once (api-contract, "Groups and access rules"): a guard
 * with its cache on answers the new set within the revocation feed's bound, 1 s, of the admin
 * API's acknowledgement. The real service, a guard in each mode, `/ops` ruled to ops and asked
 * in a loop while the PUT runs (the cached pass hot): no pass ended more than 1 s after a removal
 * was acknowledged, no refusal more than 1 s after an addition. A duration, so the timing set
 * (test/guard/groups-change.test.ts judges the same order of things with the fast suite's margin).
 */

const BOUND_MS = 1000
const ROUNDS = 5
const CASES: ReadonlyArray<{ kind: BackendKind, mode: GuardMode }> = [
  { kind: 'real', mode: 'direct' },
  { kind: 'real', mode: 'http' },
  { kind: 'embedded', mode: 'http' }
]

const figures = (seen: readonly ChangeSeen[]): string => {
  const lastOld = seen.map((change) => change.lastOldAfterAckMs ?? -Infinity)
  const firstNew = seen.map((change) => change.firstNewAfterAckMs)
  return `last old answer after the ack ${lastOld.map((ms) => ms.toFixed(1)).join(', ')} ms (max ${Math.max(...lastOld).toFixed(1)}); ` +
    `first new ${firstNew.map((ms) => ms.toFixed(1)).join(', ')} ms (max ${Math.max(...firstNew).toFixed(1)}); ` +
    `PUT ${seen.map((change) => (change.ackedAt - change.sentAt).toFixed(0)).join(', ')} ms`
}

for (const { kind, mode } of CASES) {
  const name = `${mode} mode, ${kind === 'real' ? 'Postgres and Redis' : 'the embedded default'}`
  t.test(`${name}: a membership change reaches a hot cached answer within ${BOUND_MS} ms of its acknowledgement`, async (t) => {
    const service = await startGroupsService(t, kind)
    await service.setGroups(['ops'])
    const { options, verifications } = service.guardOptions(mode, { cache: { maxEntries: 100, ttlMs: 60_000 } })
    const guarded = await buildGuardedApp(t, options, opsRoute)
    const token = await service.login()
    const removals: ChangeSeen[] = []
    const additions: ChangeSeen[] = []
    for (let round = 0; round < ROUNDS; round++) {
      for (const [groups, want, seen] of [[[], 403, removals], [['ops'], 200, additions]] as const) {
        const change = await askThroughChange(guarded, token, async () => {
          await sleep(20)
          // The answer being served is the cached one when the PUT is sent.
          await warm(guarded, verifications, token)
          await service.setGroups(groups)
        }, want, 5 * BOUND_MS)
        judgeChange(t, change, BOUND_MS, `round ${round + 1}, ${want === 403 ? 'removed' : 'added'}`)
        if (change.lastOldAfterAckMs !== undefined && change.lastOldAfterAckMs > BOUND_MS) t.comment(describeChange(change))
        seen.push(change)
      }
    }
    t.comment(`${name}: removed: ${figures(removals)}`)
    t.comment(`${name}: added: ${figures(additions)}`)
  })
}
