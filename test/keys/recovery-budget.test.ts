import t from 'tap'
import { createRecoveryBudget } from '../../src/api-keys/recovery-budget.js'

/* The per-client budget of key look-ups (api-keys/recovery-budget.ts), on a clock the test moves. */

t.test('each client spends its own bucket; one client emptied leaves another\'s whole', async (t) => {
  let now = 0
  const budget = createRecoveryBudget({ perSecond: 2, burst: 3, maxClients: 100, now: () => now })
  t.same([1, 2, 3, 4].map(() => budget.spend('a')), [true, true, true, false], 'a: the burst, then none')
  t.same([1, 2, 3].map(() => budget.spend('b')), [true, true, true], 'b: its own burst, untouched by a')
  now += 500
  t.same([budget.spend('a'), budget.spend('a')], [true, false], 'half a second at 2 a second: one more')
  now += 60_000
  t.same([1, 2, 3, 4].map(() => budget.spend('a')), [true, true, true, false], 'refilled to the burst, never past it')
})

t.test('bounded: past maxClients the least recently used client is forgotten', async (t) => {
  const budget = createRecoveryBudget({ perSecond: 1, burst: 1, maxClients: 3, now: () => 0 })
  for (const client of ['a', 'b', 'c']) budget.spend(client)
  t.equal(budget.spend('a'), false, 'a spent')
  budget.spend('d')
  t.equal(budget.size, 3, 'still three tracked')
  t.equal(budget.spend('c'), false, 'c, used after b, is still tracked (spent)')
  t.equal(budget.spend('b'), true, 'b, the least recent, was forgotten: a new bucket')
  for (let i = 0; i < 10_000; i++) budget.spend(`10.0.${i >> 8}.${i & 255}`)
  t.equal(budget.size, 3, 'ten thousand addresses: three tracked')
})
