import { setTimeout as sleep } from 'node:timers/promises'
import type { Test } from 'tap'
import type { FailureOutcome, LimitVerdict, LoginLimiter, LoginLimits } from '../../src/core/stores/login-limiter.js'

export type MakeLoginLimiter = (t: Test, limits: LoginLimits) => Promise<LoginLimiter>

/** Small times so the suite runs in about a second per implementation; generous per-IP limits unless a test is about them. */
const limitsWith = (overrides: Partial<LoginLimits> = {}): LoginLimits => ({
  maxFailures: 3,
  lockoutMs: 200,
  maxLockoutMs: 1000,
  maxFailuresPerIp: 10_000,
  ipWindowMs: 60_000,
  ...overrides
})

/** Slack for timers and a shared machine: a verdict read right after a lock starts is at most this much short of it. */
const SLACK_MS = 80

type Refusal = Extract<LimitVerdict, { allowed: false }>

function refusal (t: Test, verdict: LimitVerdict, reason: Refusal['reason'], what: string): number {
  t.equal(verdict.allowed, false, `${what}: refused`)
  if (verdict.allowed) return 0
  t.equal(verdict.reason, reason, `${what}: reason ${reason}`)
  return verdict.retryAfterMs
}

/** The lock a failure started (0: none); -1 when it was not counted (the account was already locked). */
function lockedMs (outcome: FailureOutcome): number {
  return outcome.counted ? outcome.lockedForMs : -1
}

async function fail (limiter: LoginLimiter, account: string, ip: string, times: number): Promise<number[]> {
  const locks: number[] = []
  for (let i = 0; i < times; i++) locks.push(lockedMs(await limiter.recordFailure(account, ip)))
  return locks
}

/**
 * One suite, every implementation: the Redis limiter (Lua scripts) and the in-process
 * one (embedded default) must apply the same rules.
 */
export function loginLimiterContract (t: Test, makeLimiter: MakeLoginLimiter): void {
  t.test('an account and an address with no history are allowed', async (t) => {
    const limiter = await makeLimiter(t, limitsWith())
    t.same(await limiter.check('nobody', '192.0.2.1'), { allowed: true })
    t.same(await limiter.check('', ''), { allowed: true }, 'even empty keys')
  })

  t.test('N-1 failures are allowed; the N-th starts a lock of lockoutMs that check refuses', async (t) => {
    const limits = limitsWith({ maxFailures: 4, lockoutMs: 400 })
    const limiter = await makeLimiter(t, limits)
    // From a different address each time: the account lock does not depend on the client.
    t.same(await fail(limiter, 'victim', '192.0.2.1', 1), [0])
    t.same(await fail(limiter, 'victim', '192.0.2.2', 1), [0])
    t.same(await fail(limiter, 'victim', '192.0.2.3', 1), [0])
    t.same(await limiter.check('victim', '192.0.2.4'), { allowed: true }, 'after N-1 failures: still allowed')
    const started = performance.now()
    t.same(await limiter.recordFailure('victim', '192.0.2.4'), { counted: true, lockedForMs: limits.lockoutMs }, 'the N-th failure reports the lock it started')
    const retryAfterMs = refusal(t, await limiter.check('victim', '192.0.2.99'), 'account-locked', 'after N failures, from any address')
    const elapsed = performance.now() - started
    t.ok(retryAfterMs <= limits.lockoutMs && retryAfterMs >= limits.lockoutMs - elapsed - SLACK_MS,
      `retryAfterMs ${retryAfterMs} is about lockoutMs ${limits.lockoutMs}`)
    t.same(await limiter.check('bystander', '192.0.2.4'), { allowed: true }, 'another account is not locked')
  })

  t.test('attempts while locked do not extend the lock, and it ends on time', async (t) => {
    // A lock of a second: at a load of 27, twenty checks took longer than the 300 ms lock this had.
    const limits = limitsWith({ maxFailures: 2, lockoutMs: 1000 })
    const limiter = await makeLimiter(t, limits)
    t.same(await fail(limiter, 'victim', '192.0.2.1', 2), [0, limits.lockoutMs])
    const first = refusal(t, await limiter.check('victim', '192.0.2.1'), 'account-locked', 'locked')
    for (let i = 0; i < 20; i++) await limiter.check('victim', '192.0.2.1')
    await sleep(100)
    const later = refusal(t, await limiter.check('victim', '192.0.2.1'), 'account-locked', '100 ms and 21 checks later')
    t.ok(later < first - 50, `retryAfterMs went down (${first} → ${later}): checks do not extend the lock`)
    await sleep(later + 30)
    t.same(await limiter.check('victim', '192.0.2.1'), { allowed: true }, 'allowed once the lock has run out')
  })

  t.test('each further lock doubles, up to maxLockoutMs', async (t) => {
    const limits = limitsWith({ maxFailures: 2, lockoutMs: 150, maxLockoutMs: 400 })
    const limiter = await makeLimiter(t, limits)
    // 150, then 300, then 600 capped at 400, and the cap holds after that.
    for (const expected of [150, 300, 400, 400]) {
      const started = performance.now()
      t.same(await fail(limiter, 'victim', '192.0.2.1', 2), [0, expected], `a lock of ${expected} ms`)
      const retryAfterMs = refusal(t, await limiter.check('victim', '192.0.2.1'), 'account-locked', `lock of ${expected} ms`)
      const elapsed = performance.now() - started
      t.ok(retryAfterMs <= expected && retryAfterMs >= expected - elapsed - SLACK_MS, `retryAfterMs ${retryAfterMs} is about ${expected}`)
      await sleep(retryAfterMs + 30)
      t.same(await limiter.check('victim', '192.0.2.1'), { allowed: true }, `the ${expected} ms lock ended`)
    }
  })

  t.test('a failure after a lock ended starts a new run: N more failures before the next lock', async (t) => {
    const limits = limitsWith({ maxFailures: 3, lockoutMs: 100, maxLockoutMs: 1000 })
    const limiter = await makeLimiter(t, limits)
    t.same(await fail(limiter, 'victim', '192.0.2.1', 3), [0, 0, 100])
    await sleep(130)
    t.same(await fail(limiter, 'victim', '192.0.2.1', 2), [0, 0], 'two failures after the lock: no lock yet')
    t.same(await limiter.check('victim', '192.0.2.1'), { allowed: true })
    t.same(await fail(limiter, 'victim', '192.0.2.1', 1), [200], 'the third one starts the doubled lock')
  })

  t.test('recordSuccess resets the failure count', async (t) => {
    const limits = limitsWith({ maxFailures: 3 })
    const limiter = await makeLimiter(t, limits)
    for (let round = 1; round <= 3; round++) {
      t.same(await fail(limiter, 'steady', '192.0.2.1', 2), [0, 0], `round ${round}: N-1 failures`)
      await limiter.recordSuccess('steady')
      t.same(await limiter.check('steady', '192.0.2.1'), { allowed: true }, `round ${round}: allowed after the success`)
    }
    t.same(await fail(limiter, 'steady', '192.0.2.1', 3), [0, 0, limits.lockoutMs], 'a full run of N still locks')
  })

  t.test('recordSuccess resets the lock level: the next lock is lockoutMs again', async (t) => {
    const limits = limitsWith({ maxFailures: 2, lockoutMs: 100, maxLockoutMs: 1000 })
    const limiter = await makeLimiter(t, limits)
    t.same(await fail(limiter, 'victim', '192.0.2.1', 2), [0, 100], 'first lock')
    await sleep(130)
    t.same(await fail(limiter, 'victim', '192.0.2.1', 2), [0, 200], 'second lock doubled')
    await sleep(230)
    await limiter.recordSuccess('victim')
    t.same(await fail(limiter, 'victim', '192.0.2.1', 2), [0, 100], 'after a success the lock starts over at lockoutMs')
  })

  t.test('recordSuccess of one account leaves others alone', async (t) => {
    const limiter = await makeLimiter(t, limitsWith({ maxFailures: 3 }))
    await fail(limiter, 'a', '192.0.2.1', 2)
    await fail(limiter, 'b', '192.0.2.1', 2)
    await limiter.recordSuccess('a')
    t.same(await fail(limiter, 'b', '192.0.2.1', 1), [200], 'b kept its two failures')
    await limiter.recordSuccess('never-seen')
    t.same(await limiter.check('never-seen', '192.0.2.1'), { allowed: true })
  })

  t.test('per address: maxFailuresPerIp failures across usernames limit that address for the window', async (t) => {
    const limits = limitsWith({ maxFailures: 100, maxFailuresPerIp: 5, ipWindowMs: 400 })
    const limiter = await makeLimiter(t, limits)
    for (let i = 0; i < 4; i++) t.same(await limiter.recordFailure(`user${i}`, '198.51.100.7'), { counted: true, lockedForMs: 0 })
    // The window opens when the first failure is counted, somewhere before the fourth one answered.
    const counted = performance.now()
    t.same(await limiter.check('user-next', '198.51.100.7'), { allowed: true }, 'N-1 failures from the address: allowed')
    t.same(await limiter.recordFailure('user4', '198.51.100.7'), { counted: true, lockedForMs: 0 }, 'the address limit locks no account')
    const retryAfterMs = refusal(t, await limiter.check('user-next', '198.51.100.7'), 'ip-limited', 'a fresh username from the address')
    t.ok(retryAfterMs > 0 && retryAfterMs <= limits.ipWindowMs, `retryAfterMs ${retryAfterMs} is within the window`)
    refusal(t, await limiter.check('user0', '198.51.100.7'), 'ip-limited', 'a username it failed before')
    t.same(await limiter.check('user-next', '198.51.100.8'), { allowed: true }, 'another address is unaffected')
    t.same(await limiter.check('user0', '198.51.100.8'), { allowed: true }, 'and so is the account, from another address')
    await sleep(Math.max(0, limits.ipWindowMs - (performance.now() - counted)) + 40)
    t.same(await limiter.check('user-next', '198.51.100.7'), { allowed: true }, 'the limit lifts when the window ends')
    t.same(await limiter.recordFailure('user5', '198.51.100.7'), { counted: true, lockedForMs: 0 })
    t.same(await limiter.check('user-next', '198.51.100.7'), { allowed: true }, 'a new window counts from zero')
  })

  t.test('a locked account is refused as account-locked even when its address is also limited', async (t) => {
    const limiter = await makeLimiter(t, limitsWith({ maxFailures: 2, maxFailuresPerIp: 2 }))
    await fail(limiter, 'victim', '198.51.100.9', 2)
    refusal(t, await limiter.check('victim', '198.51.100.9'), 'account-locked', 'both limits hit')
    refusal(t, await limiter.check('other', '198.51.100.9'), 'ip-limited', 'another account from that address')
  })

  t.test('concurrent failures are counted exactly: 50 at once, exactly one starts the lock', async (t) => {
    const limits = limitsWith({ maxFailures: 50, lockoutMs: 5000, maxLockoutMs: 10_000 })
    const limiter = await makeLimiter(t, limits)
    const outcomes = await Promise.all(Array.from({ length: 50 }, async (_, i) =>
      await limiter.recordFailure('crowd', `203.0.113.${i}`)))
    const locks = outcomes.filter((outcome) => lockedMs(outcome) > 0)
    t.equal(locks.length, 1, 'exactly one failure started a lock')
    t.same(locks[0], { counted: true, lockedForMs: limits.lockoutMs })
    refusal(t, await limiter.check('crowd', '203.0.113.200'), 'account-locked', 'after 50 concurrent failures')
  })

  t.test('concurrent failures from one address are counted exactly', async (t) => {
    const limiter = await makeLimiter(t, limitsWith({ maxFailures: 100, maxFailuresPerIp: 60 }))
    await Promise.all(Array.from({ length: 59 }, async (_, i) => await limiter.recordFailure(`user${i}`, '203.0.113.1')))
    t.same(await limiter.check('next', '203.0.113.1'), { allowed: true }, '59 of 60: allowed')
    await limiter.recordFailure('user59', '203.0.113.1')
    refusal(t, await limiter.check('next', '203.0.113.1'), 'ip-limited', '60 of 60')
  })

  t.test('parallel guesses learn nothing past the N-th failure: later ones are refused, not counted', async (t) => {
    const limiter = await makeLimiter(t, limitsWith({ maxFailures: 3, lockoutMs: 5000, maxLockoutMs: 10_000 }))
    // Ten guesses all passed check before any failure was recorded, then settle at once.
    const outcomes = await Promise.all(Array.from({ length: 10 }, async () => await limiter.recordFailure('erin', '192.0.2.80')))
    t.equal(outcomes.filter((o) => o.counted).length, 3, 'exactly maxFailures failures were counted (and answered)')
    t.equal(outcomes.filter((o) => lockedMs(o) > 0).length, 1, 'the third started the lock')
    t.ok(outcomes.filter((o) => !o.counted).every((o) => !o.counted && o.retryAfterMs > 4000), 'the rest: refused with the lock\'s time')
    const lockLeft = refusal(t, await limiter.check('erin', '192.0.2.80'), 'account-locked', 'locked')
    t.ok(lockLeft <= 5000, 'refused failures did not extend the lock')
  })

  t.test('a success settling after a lock started meanwhile is refused, and the lock stays', async (t) => {
    const limiter = await makeLimiter(t, limitsWith({ maxFailures: 2 }))
    t.same(await limiter.check('fay', '192.0.2.90'), { allowed: true }, 'the right guess passes check...')
    await limiter.recordFailure('fay', '192.0.2.91')
    await limiter.recordFailure('fay', '192.0.2.92')
    refusal(t, await limiter.recordSuccess('fay'), 'account-locked', '...but settles after two wrong ones locked the account')
    refusal(t, await limiter.check('fay', '192.0.2.90'), 'account-locked', 'still locked')
  })

  t.test('any number of parallel successes: only failures count', async (t) => {
    const limiter = await makeLimiter(t, limitsWith({ maxFailures: 2 }))
    const verdicts = await Promise.all(Array.from({ length: 50 }, async () => await limiter.recordSuccess('gil')))
    t.ok(verdicts.every((v) => v.allowed), '50 successes at once are all allowed')
    t.same(await limiter.check('gil', '192.0.2.93'), { allowed: true })
  })

  t.test('usernames and addresses shaped like patterns, key syntax or line breaks are only data', async (t) => {
    const limiter = await makeLimiter(t, limitsWith({ maxFailures: 2, maxFailuresPerIp: 2 }))
    const long = 'x'.repeat(10_000)
    const odd = ['*', '{x}', 'a:b', 'line\r\nbreak', '?', '[ab]', long, 'ünïcødé 😀']
    for (const [i, name] of odd.entries()) {
      // One failure from each of two addresses, so no address reaches its limit here.
      const locks = [lockedMs(await limiter.recordFailure(name, `10.0.${i}.1`)), lockedMs(await limiter.recordFailure(name, `10.0.${i}.2`))]
      t.same(locks, [0, 200], `${JSON.stringify(name.slice(0, 20))} locks on its own`)
      refusal(t, await limiter.check(name, '10.9.9.9'), 'account-locked', JSON.stringify(name.slice(0, 20)))
    }
    for (const name of ['plain', 'a', 'x', 'x'.repeat(9_999), 'line', 'break', '{x', 'ab', 'a:b:c', 'LINE\r\nBREAK']) {
      t.same(await limiter.check(name, '10.9.9.9'), { allowed: true }, `${JSON.stringify(name.slice(0, 20))} is untouched`)
    }
    // The same strings as addresses: only the address that failed is limited.
    await fail(limiter, 'u1', '*', 1)
    await fail(limiter, 'u2', '*', 1)
    refusal(t, await limiter.check('fresh', '*'), 'ip-limited', 'address "*"')
    for (const address of ['10.0.0.1', '{x}', '?', '::1', long, 'line\r\nbreak']) {
      t.same(await limiter.check('fresh', address), { allowed: true }, `address ${JSON.stringify(address.slice(0, 20))} untouched by "*"`)
    }
  })
  t.test('lockedForMs reads the lock; unlock lifts it and its level, and leaves the address counter and other accounts', async (t) => {
    const limits = limitsWith({ maxFailures: 2, lockoutMs: 5000, maxLockoutMs: 20_000, maxFailuresPerIp: 4 })
    const limiter = await makeLimiter(t, limits)
    t.equal(await limiter.lockedForMs('gil'), 0, 'no history: not locked')
    t.same(await fail(limiter, 'gil', '192.0.2.70', 2), [0, 5000], 'locked')
    const left = await limiter.lockedForMs('gil')
    t.ok(left > 5000 - SLACK_MS && left <= 5000, `lockedForMs ${left} is the lock's remaining time`)
    t.same(await fail(limiter, 'hal', '192.0.2.71', 2), [0, 5000], 'another account locked too')
    await limiter.unlock('gil')
    t.equal(await limiter.lockedForMs('gil'), 0, 'unlocked')
    t.same(await limiter.check('gil', '192.0.2.72'), { allowed: true }, 'a Login may go ahead at once')
    t.same(await fail(limiter, 'gil', '192.0.2.72', 2), [0, 5000], 'the next lock starts over at lockoutMs (the level went too)')
    refusal(t, await limiter.check('hal', '192.0.2.73'), 'account-locked', 'the other account stays locked')
    await limiter.unlock('nobody')
    t.equal(await limiter.lockedForMs('nobody'), 0, 'unlocking an account with no history is harmless')
  })
}
