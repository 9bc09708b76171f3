import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { loadavg } from 'node:os'
import { buildTestApp } from '../../support/app.js'
import { useRealArgon2 } from '../../support/config.js'
import { recordHashOrder } from '../../support/hash-order.js'
import { percentile } from '../../../support/load.js'

// This file's subject is argon2id's real cost (test/support/config.ts).
useRealArgon2()

/*
 * 80 concurrent correct Logins of one account filled the hash queue, and every
 * Login of another user answered 503 for as long as the flood lasted, once (successful Logins are
 * never rate limited). The queue is shared fairly now: one account (and one client IP) may
 * hold 2 running and 8 waiting hashes, its excess is answered 429 with Retry-After, and
 * another user's Login keeps succeeding in about its usual time.
 */

const FLOOD = { username: 'flooder', password: 'flooder correct password', ip: '10.0.0.1' }
const OTHER = { username: 'bystander', password: 'bystander correct password', ip: '10.0.0.2' }
const IN_FLIGHT = 80
const OTHER_LOGINS = 15

t.test('a flood of correct Logins of one account: another account logs in within its normal time', async (t) => {
  // One hashing thread and the default queue, whatever the machine: the setting the probe saturated.
  const { app, addUser } = await buildTestApp(t, 'real', { hashing: { concurrency: 1, maxQueued: 64 } })
  await addUser(FLOOD.username, FLOOD.password)
  await addUser(OTHER.username, OTHER.password)
  const login = async (who: typeof FLOOD): Promise<{ status: number, retryAfter: string | undefined, ms: number }> => {
    const started = performance.now()
    const response = await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: who.username, password: who.password }, remoteAddress: who.ip })
    const retryAfter = response.headers['retry-after']
    return { status: response.statusCode, retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined, ms: performance.now() - started }
  }

  const alone: number[] = []
  for (let i = 0; i < 5; i++) {
    const answer = await login(OTHER)
    t.equal(answer.status, 200, 'a Login with no flood')
    alone.push(answer.ms)
  }
  const normal = percentile(alone, 50)

  // The flood: IN_FLIGHT Logins of one account at all times, each answered one replaced by another
  // (after a 429, when its Retry-After says: a client that ignores it is a request flood, which
  // no queue can help with, and inside this one process would measure the test's own event loop).
  let flooding = true
  const floodAnswers: Array<{ status: number, retryAfter: string | undefined }> = []
  const flooder = async (): Promise<void> => {
    while (flooding) {
      const answer = await login(FLOOD)
      floodAnswers.push(answer)
      if (answer.status === 429) await sleep(1000 * Number(answer.retryAfter ?? 1))
    }
  }
  const flooders = Array.from({ length: IN_FLIGHT }, flooder)
  const during: Array<{ status: number, ms: number }> = []
  for (let i = 0; i < OTHER_LOGINS; i++) during.push(await login(OTHER))
  flooding = false
  await Promise.all(flooders)

  const statuses = [...new Set(during.map((answer) => answer.status))]
  const latencies = during.map((answer) => answer.ms)
  const floodCounts = floodAnswers.reduce<Record<number, number>>((counts, answer) => ({ ...counts, [answer.status]: (counts[answer.status] ?? 0) + 1 }), {})
  t.comment(`another account's Login: ${normal.toFixed(0)} ms alone (median of 5); during the flood of ${IN_FLIGHT} in flight: ` +
    `median ${percentile(latencies, 50).toFixed(0)} ms, max ${Math.max(...latencies).toFixed(0)} ms over ${OTHER_LOGINS} Logins; flood answers ${JSON.stringify(floodCounts)}`)
  t.same(statuses, [200], `every Login of the other account succeeded during the flood (${during.map((answer) => answer.status).join(' ')})`)
  // Generous, for a shared machine: waiting behind the flood's backlog, as first come first served
  // made it, would cost some IN_FLIGHT hashes; a fair turn costs about the one hash already running.
  t.ok(percentile(latencies, 50) <= 10 * normal + 200, `its median during the flood is within its normal time (10x ${normal.toFixed(0)} ms + 200 ms, against ${IN_FLIGHT}x behind the flood)`)
  t.ok((floodCounts[429] ?? 0) > 0, 'the flooding account\'s excess was refused with 429')
  t.notOk(floodAnswers.some((answer) => answer.status === 503), 'never with 503: the queue as a whole never filled')
  t.ok(floodAnswers.filter((answer) => answer.status === 429).every((answer) => answer.retryAfter === '1'), '429 with Retry-After: 1')
  t.ok((floodCounts[200] ?? 0) > 0, 'the flooding account\'s own Logins go on succeeding within its share')
})

t.test('the flood from the address another account logs in from: its Logins wait only for the hashes already running', async (t) => {
  // Both accounts behind one address (a NAT, or a probe on one machine): that address's share is the flood's too, and the order must still go by account.
  const SHARED = { ...FLOOD, ip: '127.0.0.1' }
  const NEIGHBOUR = { ...OTHER, ip: '127.0.0.1' }
  const order = recordHashOrder(NEIGHBOUR.username, (password) => password === NEIGHBOUR.password ? NEIGHBOUR.username : SHARED.username)
  const { app, addUser } = await buildTestApp(t, 'real', { hashing: { concurrency: 1, maxQueued: 64 } }, { hasher: order.hasher })
  await addUser(SHARED.username, SHARED.password)
  await addUser(NEIGHBOUR.username, NEIGHBOUR.password)
  const login = async (who: typeof FLOOD): Promise<{ status: number, retryAfter: string | undefined, ms: number }> => {
    const started = performance.now()
    const response = await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: who.username, password: who.password }, remoteAddress: who.ip })
    const retryAfter = response.headers['retry-after']
    return { status: response.statusCode, retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined, ms: performance.now() - started }
  }
  const alone: number[] = []
  for (let i = 0; i < 5; i++) alone.push((await login(NEIGHBOUR)).ms)
  const normal = percentile(alone, 50)
  const entriesBefore = order.entries.length

  let flooding = true
  const floodAnswers: number[] = []
  const flooders = Array.from({ length: IN_FLIGHT }, async () => {
    while (flooding) {
      const answer = await login(SHARED)
      floodAnswers.push(answer.status)
      if (answer.status === 429) await sleep(1000 * Number(answer.retryAfter ?? 1))
    }
  })
  // As the probe: one Login every 250 ms for 5 s, each after the one before has answered.
  await sleep(250)
  const during: Array<{ status: number, ms: number }> = []
  const window = performance.now() + 5000
  while (performance.now() < window) {
    during.push(await login(NEIGHBOUR))
    await sleep(250)
  }
  flooding = false
  await Promise.all(flooders)

  const latencies = during.map((answer) => answer.ms)
  const ahead = order.entries.slice(entriesBefore).map((_, index) => order.startedAhead(entriesBefore + index))
  const floodCounts = floodAnswers.reduce<Record<number, number>>((counts, status) => ({ ...counts, [status]: (counts[status] ?? 0) + 1 }), {})
  t.comment(`another account's Login from the flood's address: ${normal.toFixed(0)} ms alone (median of 5); during the flood of ${IN_FLIGHT} in flight: ` +
    `${during.length} Logins in 5 s, median ${percentile(latencies, 50).toFixed(0)} ms, max ${Math.max(...latencies).toFixed(0)} ms; ` +
    `hashes started ahead of each: ${ahead.join(' ')}; flood answers ${JSON.stringify(floodCounts)}; load average ${loadavg()[0]?.toFixed(1)}`)
  t.same([...new Set(during.map((answer) => answer.status))], [200], 'every Login of the other account succeeded during the flood')
  t.ok((floodCounts[429] ?? 0) > 0 && (floodCounts[200] ?? 0) > 0, 'the flood filled the flooding account\'s share (its excess answered 429) and its own Logins went on')
  t.equal(ahead.length, during.length, 'each of its verifies came to the queue once')
  // The promise itself, in hashes: a loaded machine slows each hash, it cannot change this count.
  t.same(ahead.filter((count) => count !== 0), [], 'none waited for a hash that was waiting when it came: at most for the one already running')
  t.ok(percentile(latencies, 50) <= 10 * normal + 200, `its median during the flood is within its normal time (10x ${normal.toFixed(0)} ms + 200 ms)`)
})
