import type { InjectOptions } from 'fastify'
import t from 'tap'
import { buildTestApp } from '../support/app.js'

/**
 * Login must take the same time whether the username exists or not, and for a
 * disabled account (security.md, Login: a dummy argon2id verify for unknown users,
 * the real verify before the disabled flag is looked at). Medians of interleaved
 * samples, so load on a shared machine hits every kind alike.
 */

const SAMPLES = 40
const WARM_UP = 4
const TOLERANCE = 0.15
const ROUNDS = 3

type Kind = 'unknown user' | 'wrong password' | 'disabled account'
const KINDS: readonly Kind[] = ['unknown user', 'wrong password', 'disabled account']

function median (values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid] as number : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

/** max/min - 1: how much slower the slower of two medians is. */
const spread = (a: number, b: number): number => Math.max(a, b) / Math.min(a, b) - 1

t.test('unknown user, wrong password and disabled account take the same time', async (t) => {
  // Limits high enough that no attempt here is refused before it is checked.
  const { app, addUser } = await buildTestApp(t, 'real', {
    maxFailedLogins: 100,
    maxFailedLoginsPerIp: 1_000_000
  })
  await Promise.all([addUser('timed-known', 'the right password'), addUser('timed-disabled', 'the right password')])
  await app.accounts.setDisabled('timed-disabled', true)

  const request = (kind: Kind, i: number): InjectOptions => {
    const username = kind === 'unknown user' ? 'timed-nobody' : kind === 'wrong password' ? 'timed-known' : 'timed-disabled'
    // The disabled account is asked with its right password: the worst case for a leak.
    const password = kind === 'disabled account' ? 'the right password' : `wrong guess ${i}`
    return {
      method: 'POST',
      url: '/auth/Login',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `username=${encodeURIComponent(username)}&password=${encodeURIComponent(password)}`,
      remoteAddress: '10.20.0.1'
    }
  }

  const bodies = new Set<string>()
  /** One round: WARM_UP + SAMPLES attempts of each kind, interleaved; the median of each kind. */
  const measure = async (round: number): Promise<Map<Kind, number>> => {
    // Each round starts with clean failure counters (3 rounds of 44 would pass maxFailedLogins).
    for (const username of ['timed-nobody', 'timed-known', 'timed-disabled']) await app.backends.limiter.recordSuccess(username)
    const samples = new Map<Kind, number[]>(KINDS.map((kind) => [kind, []]))
    for (let i = 0; i < WARM_UP + SAMPLES; i++) {
      // Rotate the order so no kind always runs first (or right after another).
      for (let k = 0; k < KINDS.length; k++) {
        const kind = KINDS[(i + k) % KINDS.length] as Kind
        const started = process.hrtime.bigint()
        const res = await app.inject(request(kind, round * 100 + i))
        const elapsedMs = Number(process.hrtime.bigint() - started) / 1e6
        bodies.add(`${res.statusCode} ${res.body}`)
        if (i >= WARM_UP) samples.get(kind)?.push(elapsedMs)
      }
    }
    const medians = new Map(KINDS.map((kind) => [kind, median(samples.get(kind) ?? [])]))
    for (const kind of KINDS) t.comment(`round ${round}: median ${kind}: ${(medians.get(kind) ?? NaN).toFixed(1)} ms over ${SAMPLES} samples`)
    return medians
  }
  const spreads = (medians: Map<Kind, number>): Array<[Kind, number]> => (['unknown user', 'disabled account'] as const)
    .map((kind) => [kind, spread(medians.get(kind) ?? NaN, medians.get('wrong password') ?? NaN)])

  // Another round (up to ROUNDS) only when one is off, so a burst of load on a shared
  // machine does not fail the run; a real leak (a skipped verify) is off by far more, every round.
  let medians = await measure(1)
  for (let round = 2; round <= ROUNDS && spreads(medians).some(([, difference]) => !(difference <= TOLERANCE)); round++) {
    t.comment(`round ${round - 1} apart by ${spreads(medians).map(([kind, d]) => `${kind} ${(d * 100).toFixed(1)} %`).join(', ')}: measuring again`)
    medians = await measure(round)
  }
  t.same([...bodies], ['401 {"status":701,"message":"Login Failed"}'], 'every attempt was answered 701, none refused by the limiter')
  const wrong = medians.get('wrong password') ?? NaN
  for (const [kind, difference] of spreads(medians)) {
    const other = medians.get(kind) ?? NaN
    t.comment(`${kind} vs wrong password: ${(difference * 100).toFixed(1)} % apart`)
    t.ok(difference <= TOLERANCE, `${kind} (${other.toFixed(1)} ms) and wrong password (${wrong.toFixed(1)} ms) medians within ${TOLERANCE * 100} %`)
  }
  t.ok(wrong > 5, `a wrong password costs a real argon2id verify (${wrong.toFixed(1)} ms)`)
})
