import t from 'tap'
import { setImmediate as turn, setTimeout as sleep } from 'node:timers/promises'
import { createFairQueue, type FairQueue, type FairQueueLimits, type HashCaller } from '../../src/passwords/fair-queue.js'
import { buildTestApp } from '../support/app.js'
import { recordHashOrder } from '../support/hash-order.js'
import { rejection } from '../support/rejection.js'

/*
 * The hash queue's order, measured in hashes, not milliseconds: the work a task is given is
 * called when the queue starts it, so a test that holds every task's work open sees exactly
 * which task started when, and ends each one when it chooses.
 */

const LIMITS: FairQueueLimits = { concurrency: 2, maxQueued: 64, perAccount: { running: 2, queued: 8 }, perIp: { running: 4, queued: 16 } }

/** A queue whose tasks run until the test finishes them, with the order they started in. */
function heldQueue (limits: FairQueueLimits = LIMITS): {
  queue: FairQueue
  started: string[]
  /** Queues a task named `name` for `caller`; its answer (or refusal) is the promise. */
  submit: (name: string, caller: HashCaller) => Promise<string>
  /** Ends the task that started first of those still running, and lets the queue start the next. */
  finishOldest: () => Promise<string>
} {
  const queue = createFairQueue(limits)
  const started: string[] = []
  const running: Array<{ name: string, finish: () => void }> = []
  return {
    queue,
    started,
    submit: async (name, caller) => await queue.run(async () => {
      started.push(name)
      await new Promise<void>((resolve) => { running.push({ name, finish: resolve }) })
      return name
    }, caller),
    async finishOldest () {
      const oldest = running.shift()
      if (oldest === undefined) throw new Error('no task is running')
      oldest.finish()
      // The finished task's turn passes on in its own continuation: let it.
      await turn()
      return oldest.name
    }
  }
}

/** Hashes that started after `name` was queued and before it started; -1: it never started. */
function startedAhead (started: string[], queuedAt: number, name: string): number {
  const at = started.indexOf(name)
  return at < 0 ? -1 : at - queuedAt
}

t.test('one account flooding from the same address as another account: the other waits only for the hashes already running', async (t) => {
  const { queue, started, submit, finishOldest } = heldQueue()
  const flooder = { account: 'flooder', ip: '127.0.0.1' }
  const bystander = { account: 'bystander', ip: '127.0.0.1' }
  let floods = 0
  const answers: Array<Promise<string>> = []
  // The flood keeps the account's whole share (2 running, 8 waiting) full: each answered task is replaced.
  const flood = (): void => { answers.push(submit(`flood-${++floods}`, flooder)) }
  for (let i = 0; i < 10; i++) flood()
  await turn()
  t.equal(queue.depth(), 10, 'the flooding account holds its share: 2 hashing, 8 waiting')
  t.match(await rejection(submit('flood-over-share', flooder)), { status: 429 }, 'and no more')

  for (let round = 1; round <= 3; round++) {
    const name = `bystander-${round}`
    const queuedAt = started.length
    const waitingAhead = queue.depth() - LIMITS.concurrency
    const mine = submit(name, bystander)
    // Each answered flood task is replaced at once, as a flooding client does; the bystander's own ends too.
    let ended = ''
    while (ended !== name && started.length - queuedAt <= 12) {
      ended = await finishOldest()
      if (ended !== name) flood()
      await turn()
    }
    const ahead = startedAhead(started, queuedAt, name)
    t.equal(waitingAhead, 8, `round ${round}: the flood had 8 hashes waiting when the other account's came`)
    t.equal(ahead, 0, `round ${round}: no hash that was waiting started before it (started ahead: ${ahead}; first come, first served: 8)`)
    if (ended === name) t.equal(await mine, name, 'its own answer')
    else break
  }
  // Drain: nothing left behind.
  while (queue.depth() > 0) await finishOldest()
  await Promise.all(answers)
  t.equal(queue.depth(), 0, 'nothing left running or waiting')
})

t.test('from different addresses too: a free slot goes to the account served least recently', async (t) => {
  const { queue, started, submit, finishOldest } = heldQueue()
  const answers: Array<Promise<string>> = []
  for (let i = 1; i <= 10; i++) answers.push(submit(`flood-${i}`, { account: 'flooder', ip: '10.0.0.1' }))
  await turn()
  const queuedAt = started.length
  answers.push(submit('bystander', { account: 'bystander', ip: '10.0.0.2' }))
  await finishOldest()
  t.equal(startedAhead(started, queuedAt, 'bystander'), 0, 'it started at the first free slot')
  while (queue.depth() > 0) await finishOldest()
  await Promise.all(answers)
})

t.test('one address flooding with many accounts: another address\'s Login starts at the first free slot', async (t) => {
  const { queue, started, submit, finishOldest } = heldQueue({ ...LIMITS, concurrency: 1 })
  const answers: Array<Promise<string>> = []
  for (let i = 1; i <= 10; i++) answers.push(submit(`flood-${i}`, { account: `account-${i}`, ip: '10.0.0.1' }))
  await turn()
  const queuedAt = started.length
  answers.push(submit('elsewhere', { account: 'elsewhere', ip: '10.0.0.2' }))
  await finishOldest()
  t.equal(startedAhead(started, queuedAt, 'elsewhere'), 0, 'not behind the address\'s nine waiting hashes')
  while (queue.depth() > 0) await finishOldest()
  await Promise.all(answers)
  t.same(started.filter((name) => name.startsWith('flood-')), Array.from({ length: 10 }, (_, i) => `flood-${i + 1}`), 'one caller\'s own tasks start in the order they came')
})

t.test('a caller hashing its running share waits even while a slot is free', async (t) => {
  const { queue, started, submit, finishOldest } = heldQueue({ ...LIMITS, concurrency: 4 })
  const caller = { account: 'busy', ip: '10.0.0.1' }
  const answers = ['one', 'two', 'three'].map(async (name) => await submit(name, caller))
  await turn()
  t.same(started, ['one', 'two'], 'two running, the third waits with two slots free')
  await finishOldest()
  t.same(started, ['one', 'two', 'three'], 'and starts when one of its own ends')
  while (queue.depth() > 0) await finishOldest()
  await Promise.all(answers)
})

t.test('beyond its share a caller is refused with 429 and Retry-After, that caller alone', async (t) => {
  const { queue, submit, finishOldest } = heldQueue()
  const answers: Array<Promise<string>> = []
  for (let i = 0; i < 10; i++) answers.push(submit(`mine-${i}`, { account: 'flooder', ip: '10.0.0.1' }))
  t.match(await rejection(submit('eleventh', { account: 'flooder', ip: '10.0.0.9' })), { status: 429, httpStatus: 429, headers: { 'retry-after': '1' } }, 'the account\'s eleventh, from any address')
  answers.push(submit('other', { account: 'other', ip: '10.0.0.1' }))
  await turn()
  t.equal(queue.depth(), 11, 'another account from the same address is still queued')
  // The address's share: 4 running and 16 waiting, whatever the accounts.
  for (let i = 0; i < 9; i++) answers.push(submit(`address-${i}`, { account: `address-${i}`, ip: '10.0.0.1' }))
  t.match(await rejection(submit('twenty-first', { account: 'fresh', ip: '10.0.0.1' })), { status: 429 }, 'the address\'s twenty-first')
  while (queue.depth() > 0) await finishOldest()
  await Promise.all(answers)
})

t.test('beyond maxQueued waiting, all callers together, a task is refused with 503 and Retry-After', async (t) => {
  const { queue, submit, finishOldest } = heldQueue({ ...LIMITS, concurrency: 1, maxQueued: 3 })
  const answers = [1, 2, 3, 4].map(async (i) => await submit(`task-${i}`, { account: `account-${i}`, ip: `10.0.0.${i}` }))
  t.match(await rejection(submit('fifth', { account: 'fifth', ip: '10.0.0.5' })), { status: 503, httpStatus: 503, headers: { 'retry-after': '1' } })
  while (queue.depth() > 0) await finishOldest()
  t.same(await Promise.all(answers), ['task-1', 'task-2', 'task-3', 'task-4'])
})

t.test('through Login, real argon2: one account flooding from the address another account logs in from', async (t) => {
  const FLOOD = { username: 'flooder', password: 'flooder correct password' }
  const OTHER = { username: 'bystander', password: 'bystander correct password' }
  // Both from one address, as two users behind one NAT (or a probe on one machine) are.
  const IP = '127.0.0.1'
  const order = recordHashOrder(OTHER.username, (password) => password === OTHER.password ? OTHER.username : FLOOD.username)
  // Two threads, both of them the flood's (its account's running share), and the service's default shares.
  const { app, addUser } = await buildTestApp(t, 'embedded', { hashing: LIMITS }, { hasher: order.hasher })
  await addUser(FLOOD.username, FLOOD.password)
  await addUser(OTHER.username, OTHER.password)
  const login = async (who: typeof FLOOD): Promise<number> =>
    (await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: who.username, password: who.password }, remoteAddress: IP })).statusCode
  const floodAnswers: number[] = []
  const until = async (condition: () => boolean): Promise<void> => {
    for (let i = 0; !condition(); i++) {
      if (i > 6000) throw new Error(`stuck: ${JSON.stringify({ starts: order.starts.length, entries: order.entries, held: order.held(), depth: order.queueDepth(), floodAnswers: floodAnswers.length })}`)
      await sleep(5)
    }
  }

  // The flood: 80 at once; a client answered 200 logs in again at once, one answered 429 waits out its Retry-After (here: stops).
  order.hold(true)
  let flooding = true
  const flooders = Array.from({ length: 80 }, async () => {
    while (flooding) {
      const status = await login(FLOOD)
      floodAnswers.push(status)
      if (status !== 200) return
    }
  })
  await until(() => floodAnswers.length === 70 && order.held() === LIMITS.concurrency)
  t.same([...new Set(floodAnswers)], [429], 'the flooding account holds its share of the queue, its excess answered 429')

  for (let round = 0; round < 3; round++) {
    let status: number | undefined
    const answered = login(OTHER).then((code) => { status = code })
    await until(() => order.entries.length > round)
    t.equal(order.entries[round]?.depth, 10, `Login ${round + 1}: when its verify came, the flood had 2 hashing and 8 waiting`)
    // One hash ends at a time; the queue starts the next as it ends.
    while (order.startedAhead(round) === undefined) {
      const before = order.starts.length
      order.letOneThrough()
      await until(() => order.starts.length > before)
    }
    const ahead = order.startedAhead(round)
    t.equal(ahead, 0, `Login ${round + 1}: no hash that was waiting started before its verify (started ahead: ${ahead}; first come, first served: 8)`)
    await until(() => { order.letOneThrough(); return status !== undefined })
    await answered
    t.equal(status, 200, `Login ${round + 1} succeeded`)
    // The flood refills its share before the next Login comes.
    await until(() => order.queueDepth() === 10 && order.held() === LIMITS.concurrency)
  }

  flooding = false
  order.hold(false)
  await Promise.all(flooders)
  t.ok(floodAnswers.filter((status) => status === 200).length > 0, 'the flooding account\'s own Logins went on succeeding within its share')
})
