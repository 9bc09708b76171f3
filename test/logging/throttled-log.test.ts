import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { createThrottledLog } from '@auth-token-service/protocol/throttled-log'

/*
 * The one throttle of repeated log lines (503s by cause, backend connection errors, dropped
 * audit events): at most a line at once and a line at the end of each interval, per key,
 * and every occurrence accounted for in `repeats`.
 */

t.test('a burst: the first at once, the last when the interval ends, standing for those between', async (t) => {
  const throttled = createThrottledLog(200)
  const written: Array<{ n: number, repeats: number }> = []
  for (let n = 1; n <= 50; n++) throttled('redis', (repeats) => { written.push({ n, repeats }) })
  t.same(written, [{ n: 1, repeats: 0 }], 'the first occurrence is written at once, the rest held')
  await sleep(300)
  t.same(written, [{ n: 1, repeats: 0 }, { n: 50, repeats: 48 }], 'the last one, when the interval ends, with the 48 between')
  t.equal(written.reduce((sum, line) => sum + 1 + line.repeats, 0), 50, 'every occurrence accounted for')
})

t.test('keys are throttled apart; a quiet key writes at once again', async (t) => {
  const throttled = createThrottledLog(100)
  const written: string[] = []
  throttled('redis', (repeats) => { written.push(`redis ${repeats}`) })
  throttled('database', (repeats) => { written.push(`database ${repeats}`) })
  throttled('redis', (repeats) => { written.push(`redis again ${repeats}`) })
  t.same(written, ['redis 0', 'database 0'], 'one key does not hold another')
  await sleep(350)
  t.same(written, ['redis 0', 'database 0', 'redis again 0'], 'the held one at the end of its interval')
  throttled('redis', (repeats) => { written.push(`redis later ${repeats}`) })
  t.same(written.at(-1), 'redis later 0', 'after a quiet interval, at once')
})

t.test('an occurrence after the interval, before its timer ran, still counts the held one', async (t) => {
  let now = 0
  const realNow = Date.now
  Date.now = () => now
  t.teardown(() => { Date.now = realNow })
  const throttled = createThrottledLog(1000)
  const written: Array<[string, number]> = []
  throttled('k', (repeats) => { written.push(['first', repeats]) })
  now = 10
  throttled('k', (repeats) => { written.push(['held', repeats]) })
  now = 20
  throttled('k', (repeats) => { written.push(['held later', repeats]) })
  now = 1500
  throttled('k', (repeats) => { written.push(['next', repeats]) })
  t.same(written, [['first', 0], ['next', 2]], 'the two held ones are repeats of the next line')
})
