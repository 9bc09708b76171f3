import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Test } from 'tap'
import {
  describe, HttpDriver, isRecord, issuedToken, latencyOf, percentile, strangerToken, verdictOf,
  type Outcome, type RunningLoad, type TokenBook, type Verdict
} from '../../support/load.js'

/** Shared checks of the fault tests: each prints what it saw, so a failure says where and when. */

/** The bootstrap account of every fault test. */
export const ACCOUNT = Object.freeze({ username: 'fault-admin', password: 'correct horse & battery: ünïcode = ok' })

/**
 * The bound on any answer while a backend is away or slow: a few times the Redis command and
 * connect timeouts (300-500 ms), so that a request that waits on a dead backend fails it, while a
 * busy machine does not (a Login answered in 1,102 ms at load 15 failed the 1,000 ms this was).
 */
export const ANSWER_BOUND_MS = 3000

/** A few lines naming the offenders, for an assertion's message. */
export function sample (outcomes: Outcome[], origin: number, limit = 5): string {
  return outcomes.slice(0, limit).map((outcome) => describe(outcome, origin)).join('\n')
}

export function countVerdicts (outcomes: Outcome[]): Partial<Record<Verdict, number>> {
  const counts: Partial<Record<Verdict, number>> = {}
  for (const outcome of outcomes) {
    const verdict = verdictOf(outcome)
    counts[verdict] = (counts[verdict] ?? 0) + 1
  }
  return counts
}

export function latencySummary (outcomes: Outcome[]): string {
  const latencies = outcomes.map(latencyOf)
  return `n=${latencies.length} p50=${percentile(latencies, 50).toFixed(1)} p99=${percentile(latencies, 99).toFixed(1)} max=${Math.max(0, ...latencies).toFixed(1)} ms`
}

/** A stretch of the run when a backend was away or slow (performance.now() times). */
export interface FaultWindow {
  from: number
  to: number
}

/**
 * Every request of the run: answered, a contract answer (no 500, nothing truncated). Every
 * Authenticate and Logout answered within `boundMs`, and so did every Login sent during a
 * fault. A Login sent in calm times may wait for the argon2 queue on a busy machine, which
 * has nothing to do with the faults: it only must not hang (`hangMs`).
 */
export function checkEveryAnswer (t: Test, outcomes: Outcome[], origin: number, options: { faults: FaultWindow[], allowNoAnswer?: boolean, boundMs?: number, hangMs?: number }): void {
  const bound = options.boundMs ?? ANSWER_BOUND_MS
  const hang = options.hangMs ?? 10_000
  const malformed = outcomes.filter((outcome) => {
    const verdict = verdictOf(outcome)
    return verdict === 'malformed' || (verdict === 'no-answer' && options.allowNoAnswer !== true)
  })
  t.equal(malformed.length, 0, `every request got a contract answer (no 500, no hang, nothing cut off)\n${sample(malformed, origin)}`)
  const duringFault = (outcome: Outcome): boolean => options.faults.some((fault) => outcome.startedAt >= fault.from && outcome.startedAt <= fault.to)
  const bounded = outcomes.filter((outcome) => outcome.answered && (outcome.op !== 'login' || duringFault(outcome)))
  const slow = bounded.filter((outcome) => latencyOf(outcome) >= bound)
  t.equal(slow.length, 0, `every Authenticate and Logout, and every Login sent during the fault, answered within ${bound} ms (${latencySummary(bounded)})\n${sample(slow, origin)}`)
  const hung = outcomes.filter((outcome) => latencyOf(outcome) >= hang)
  t.equal(hung.length, 0, `no request took ${hang} ms or more (all: ${latencySummary(outcomes)})\n${sample(hung, origin)}`)
}

/** Requests sent and answered wholly inside [from, to]: each must be one of `allowed`. */
export function checkWindow (t: Test, outcomes: Outcome[], origin: number, window: { from: number, to: number, label: string }, allowed: readonly Verdict[], minimum = 1): Outcome[] {
  const inside = outcomes.filter((outcome) => outcome.startedAt >= window.from && outcome.endedAt <= window.to)
  const wrong = inside.filter((outcome) => !allowed.includes(verdictOf(outcome)))
  t.ok(inside.length >= minimum, `${window.label}: ${inside.length} requests (at least ${minimum})`)
  t.equal(wrong.length, 0, `${window.label}: every answer is ${allowed.join(' or ')} ${JSON.stringify(countVerdicts(inside))}\n${sample(wrong, origin)}`)
  return inside
}

export function checkViolations (t: Test, load: RunningLoad, origin: number): void {
  const lines = load.violations.slice(0, 5).map(({ outcome, reason }) => `${reason}: ${describe(outcome, origin)} token=${outcome.token ?? '-'}`)
  t.equal(load.violations.length, 0, `no answer contradicted the token's known state\n${lines.join('\n')}`)
}

/** The event loop stayed responsive: /health/live answered every time, quickly. */
export function checkProbe (t: Test, probe: RunningLoad, origin: number, boundMs = ANSWER_BOUND_MS): void {
  const bad = probe.outcomes.filter((outcome) => outcome.httpStatus !== 200 || latencyOf(outcome) >= boundMs)
  t.ok(probe.outcomes.length > 5, `/health/live was probed (${probe.outcomes.length} times)`)
  t.equal(bad.length, 0, `/health/live answered 200 within ${boundMs} ms every time (${latencySummary(probe.outcomes)})\n${sample(bad, origin)}`)
}

/** After the run: every token of the book answers as its state says (unknown: either way). */
export async function checkBook (t: Test, driver: HttpDriver, book: TokenBook, label: string): Promise<void> {
  const wrong: string[] = []
  let checked = 0
  const tokens = [...book.entries.keys()]
  for (let i = 0; i < tokens.length; i += 20) {
    await Promise.all(tokens.slice(i, i + 20).map(async (token) => {
      const state = book.state(token)
      const verdict = verdictOf(await driver.authenticate(token))
      checked++
      const right = state === 'active' ? verdict === 'success' : state === 'ended' ? verdict === 'unauthorized' : verdict === 'success' || verdict === 'unauthorized'
      if (!right) wrong.push(`${state ?? '?'} token answered ${verdict}`)
    }))
  }
  t.equal(wrong.length, 0, `${label}: all ${checked} tokens of the book answer as their state says (${book.tokens('active').length} active, ${book.tokens('ended').length} ended, ${book.tokens('unknown').length} unknown)\n${wrong.slice(0, 5).join('\n')}`)
}

/** Logs in `count` times (`parallel` at once) and returns the tokens; fails the test on anything but 0. */
export async function loginMany (t: Test, driver: HttpDriver, count: number, options: { parallel?: number } = {}): Promise<string[]> {
  const tokens: string[] = []
  const parallel = options.parallel ?? 2
  for (let i = 0; i < count; i += parallel) {
    const outcomes = await Promise.all(Array.from({ length: Math.min(parallel, count - i) }, async () => await driver.login(ACCOUNT.username, ACCOUNT.password, undefined, 30_000)))
    for (const outcome of outcomes) {
      const token = issuedToken(outcome)
      if (token === undefined) throw new Error(`a Login before the fault failed: ${describe(outcome)}`)
      tokens.push(token)
    }
  }
  t.equal(new Set(tokens).size, count, `${count} tokens issued before the fault`)
  return tokens
}

/**
 * Waits (up to `timeoutMs`) for the load's first Login sent after `after` to answer 0, and
 * returns when that answer came: the moment the service had recovered. If none does, the
 * test fails saying what the Logins got instead, and Infinity is returned.
 */
export async function awaitLoginRecovery (t: Test, load: RunningLoad, after: number, label: string, timeoutMs = 15_000): Promise<number> {
  const deadline = performance.now() + timeoutMs
  while (performance.now() < deadline) {
    const first = firstLoginSuccessAfter(load.outcomes, after)
    if (first !== undefined) return first.endedAt
    await sleep(50)
  }
  const logins = load.outcomes.filter((outcome) => outcome.op === 'login' && outcome.startedAt >= after)
  t.fail(`${label}: no Login answered 0 within ${timeoutMs} ms; the ${logins.length} Logins sent got ${JSON.stringify(countVerdicts(logins))}\n${sample(logins.slice(-3), after)}`)
  return Infinity
}

/** The first Login answered 0 that was sent after `after`: when the service had recovered. */
export function firstLoginSuccessAfter (outcomes: Outcome[], after: number): Outcome | undefined {
  return outcomes
    .filter((outcome) => outcome.op === 'login' && outcome.startedAt >= after && verdictOf(outcome) === 'success')
    .sort((a, b) => a.endedAt - b.endedAt)[0]
}

/**
 * Lines of a service's output that mean it crashed or nearly did: a pino line at level
 * fatal or one about an uncaught error (close-with-grace logs it), or any line Node itself
 * printed (not JSON) about an error. A backend's own words inside a logged error (Postgres
 * says "severity":"FATAL" when it shuts down) are not markers.
 */
export function crashMarkers (output: string): string[] {
  return output.split('\n').filter((line) => {
    if (line.trim() === '') return false
    let parsed: unknown
    try { parsed = JSON.parse(line) } catch { return /error|uncaught|unhandled|segmentation|heap out of memory|abort/i.test(line) }
    if (!isRecord(parsed)) return true
    const level = typeof parsed.level === 'number' ? parsed.level : 0
    const message = typeof parsed.msg === 'string' ? parsed.msg : ''
    return level >= 60 || /uncaught|unhandled/i.test(message)
  })
}

/**
 * One Login, one Authenticate of `token` and one Logout of a token never issued, at once:
 * sent inside a fault window so each operation is surely tried there (the load's mix is random).
 */
export async function tryEachOperation (driver: HttpDriver, token: string): Promise<Outcome[]> {
  return await Promise.all([
    driver.login(ACCOUNT.username, ACCOUNT.password),
    driver.authenticate(token),
    driver.logout(strangerToken())
  ])
}
