import argon2 from 'argon2'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { loadConfig } from '../../src/config/config.js'
import { createBoundedQueue } from '../../src/passwords/bounded-queue.js'
import { StatusError } from '../../src/errors/status.js'
import { buildTestApp, type TestApp } from '../support/app.js'
import { useRealArgon2 } from '../support/config.js'
import { rejection } from '../support/rejection.js'

// This file's subject is argon2id's real cost (test/support/config.ts).
useRealArgon2()

/**
 * Password storage and checking (security.md, Login): argon2id at
 * least at OWASP's minimum with a 16-byte salt, rehash below policy on the next
 * success, NFC-normalized passwords checked exactly otherwise (1024 bytes accepted,
 * longer refused before any hashing), and a bounded hashing queue so a login flood
 * gets 503 + Retry-After rather than starving Authenticate.
 */

type Reply = LightMyRequestResponse

const BODY = {
  badRequest: '{"status":400,"message":"Bad Request","detail":"password is longer than 1024 bytes"}',
  loginFailed: '{"status":701,"message":"Login Failed"}',
  unavailable: '{"status":503,"message":"Service Unavailable"}'
} as const

/** argon2id, version 19, the given m/t/p, a 16-byte salt (22 base64 characters) and a 32-byte hash (43). */
const phc = (m: number, timeCost: number, p: number): RegExp =>
  new RegExp(`^\\$argon2id\\$v=19\\$m=${m},t=${timeCost},p=${p}\\$[A-Za-z0-9+/]{22}\\$[A-Za-z0-9+/]{43}$`)

async function login (app: FastifyInstance, username: string, password: string, style: 'form' | 'json' = 'form'): Promise<Reply> {
  return style === 'json'
    ? await app.inject({ method: 'POST', url: '/auth/Login', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ username, password }) })
    : await app.inject({
      method: 'POST',
      url: '/auth/Login',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `username=${encodeURIComponent(username)}&password=${encodeURIComponent(password)}`
    })
}

function assertSuccess (t: Test, res: Reply, what: string): void {
  t.equal(res.statusCode, 200, `${what}: HTTP 200`)
  t.match(res.body, /^\{"status":0,"message":"Success","token":/, `${what}: Success`)
}

function assertFailed (t: Test, res: Reply, what: string): void {
  t.equal(res.statusCode, 401, `${what}: HTTP 401`)
  t.equal(res.body, BODY.loginFailed, `${what}: Login Failed`)
}

async function storedHash (testApp: TestApp, username: string): Promise<string> {
  const { rows } = await testApp.database.query<{ password_hash: string }>('SELECT password_hash FROM users WHERE username = $1', [username])
  return rows[0]?.password_hash ?? ''
}

/** The app's hasher, wrapped to count every argon2 operation that reaches it. */
function countHashing (app: FastifyInstance): { count: () => number } {
  const hasher = app.backends.hasher
  let calls = 0
  const { hash, verify, verifyDummy } = hasher
  hasher.hash = async (password) => { calls++; return await hash(password) }
  hasher.verify = async (stored, password) => { calls++; return await verify(stored, password) }
  hasher.verifyDummy = async (password) => { calls++; await verifyDummy(password) }
  return { count: () => calls }
}

const byteLength = (s: string): number => Buffer.byteLength(s, 'utf8')

t.test('argon2id policy', async (t) => {
  t.test('stored hashes are argon2id at OWASP\'s minimum (m=19456, t=2, p=1), 16-byte salt, unique per account', async (t) => {
    const testApp = await buildTestApp(t, 'real')
    await Promise.all([testApp.addUser('hash-a', 'same password'), testApp.addUser('hash-b', 'same password')])
    const a = await storedHash(testApp, 'hash-a')
    const b = await storedHash(testApp, 'hash-b')
    t.match(a, phc(19456, 2, 1), `stored: ${a.slice(0, 32)}...`)
    t.ok(a.startsWith('$argon2id$v=19$m=19456,t=2,p=1$'), 'starts with $argon2id$v=19$m=19456,t=2,p=1$')
    t.not(a, b, 'the same password gives different hashes (random salt)')
    t.notOk(a.includes('same password'), 'no plaintext')
  })

  t.test('the configuration refuses parameters below OWASP\'s minimum', async (t) => {
    for (const [variable, value] of [['AUTH_ARGON2_MEMORY_KIB', '19455'], ['AUTH_ARGON2_TIME_COST', '1'], ['AUTH_ARGON2_PARALLELISM', '0']] as const) {
      t.throws(() => loadConfig({ [variable]: value }), { name: 'ConfigError', variable }, `${variable}=${value} is refused`)
    }
  })

  t.test('a hash below the current policy is rehashed on the next successful login, and only then', async (t) => {
    const testApp = await buildTestApp(t, 'real', {
      argon2: { memoryCost: 19456, timeCost: 3, parallelism: 1 }
    })
    const old = await argon2.hash('upgrade me', { type: argon2.argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 })
    await testApp.app.backends.users.create({ username: 'legacy-hash', passwordHash: old, federated: false })
    assertFailed(t, await login(testApp.app, 'legacy-hash', 'wrong'), 'a failed login')
    t.equal(await storedHash(testApp, 'legacy-hash'), old, 'a failure does not rehash')
    assertSuccess(t, await login(testApp.app, 'legacy-hash', 'upgrade me'), 'login with the t=2 hash')
    const upgraded = await storedHash(testApp, 'legacy-hash')
    t.match(upgraded, phc(19456, 3, 1), 'rehashed at the policy\'s t=3')
    t.ok(await argon2.verify(upgraded, 'upgrade me'), 'the new hash is of the same password')
    assertSuccess(t, await login(testApp.app, 'legacy-hash', 'upgrade me'), 'login with the new hash')
    t.equal(await storedHash(testApp, 'legacy-hash'), upgraded, 'a hash at the policy is left alone')
  })

  t.test('a hash node-argon2 wrote at the policy (parameters in m,p,t order) logs in, and stays as it is', async (t) => {
    const testApp = await buildTestApp(t, 'real')
    const written = await argon2.hash('kept as is', { type: argon2.argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1, hashLength: 32 })
    t.match(written, /^\$argon2id\$v=19\$m=19456,p=1,t=2\$/, 'node-argon2 0.45 orders the parameters m,p,t')
    await testApp.app.backends.users.create({ username: 'node-argon2-hash', passwordHash: written, federated: false })
    assertFailed(t, await login(testApp.app, 'node-argon2-hash', 'not it'), 'the wrong password')
    assertSuccess(t, await login(testApp.app, 'node-argon2-hash', 'kept as is'), 'the right password, verified by @node-rs/argon2')
    t.equal(await storedHash(testApp, 'node-argon2-hash'), written, 'at the policy already: not rehashed')
  })
})

t.test('passwords are checked exactly as sent, after NFC', async (t) => {
  const testApp = await buildTestApp(t, 'real', { maxFailedLogins: 100 })
  const { app } = testApp
  // 341 three-byte characters and one ASCII letter: exactly 1024 bytes in 342 characters.
  const max = `${'€'.repeat(341)}a`
  const tooLong = `${'€'.repeat(341)}é`
  const nfd = 'Cafe\u0301 cre\u0300me'
  const nfc = nfd.normalize('NFC')
  await Promise.all([
    testApp.addUser('max-bytes', max),
    testApp.addUser('set-as-nfd', nfd),
    testApp.addUser('set-as-nfc', nfc),
    testApp.addUser('case-user', 'CorrectHorse')
  ])

  t.test('exactly 1024 bytes of multi-byte characters log in', async (t) => {
    t.equal(byteLength(max), 1024)
    assertSuccess(t, await login(app, 'max-bytes', max), '1024 bytes as a form')
    assertSuccess(t, await login(app, 'max-bytes', max, 'json'), '1024 bytes as JSON')
  })

  t.test('1025 bytes is a 400 before any hashing', async (t) => {
    t.equal(byteLength(tooLong), 1025)
    const hashing = countHashing(app)
    const times: number[] = []
    for (const [username, style] of [['max-bytes', 'form'], ['max-bytes', 'json'], ['no-such-user', 'form']] as const) {
      const started = performance.now()
      const res = await login(app, username, tooLong, style)
      times.push(performance.now() - started)
      t.equal(res.statusCode, 400, `${username} by ${style}: HTTP 400`)
      t.equal(res.body, BODY.badRequest, `${username} by ${style}: Bad Request`)
    }
    t.equal(hashing.count(), 0, 'no hash or verify was started')
    const started = performance.now()
    assertSuccess(t, await login(app, 'max-bytes', max), 'the account is not locked or counted by the refusals')
    const verified = performance.now() - started
    t.equal(hashing.count(), 1, 'a normal login does verify (the counter works)')
    // The count above is the claim; the times are printed, not judged (no duration
    // is a pass condition outside test/integration/timing/timing.test.ts).
    t.comment(`the refusal costs no hash: fastest ${Math.min(...times).toFixed(1)} ms against ${verified.toFixed(1)} ms for a login with a verify`)
  })

  t.test('no truncation: one character changed at the end of 1024 bytes fails, and so does a prefix', async (t) => {
    assertFailed(t, await login(app, 'max-bytes', `${'€'.repeat(341)}b`), 'the last character changed')
    assertFailed(t, await login(app, 'max-bytes', '€'.repeat(341)), 'without the last character')
    assertFailed(t, await login(app, 'max-bytes', '€'.repeat(24)), 'the first 72 bytes (bcrypt\'s limit)')
  })

  t.test('NFC: a password set as NFD logs in with NFC input, and the other way round', async (t) => {
    t.not(nfd, nfc, 'the spellings differ as strings')
    assertSuccess(t, await login(app, 'set-as-nfd', nfc), 'set as NFD, given as NFC')
    assertSuccess(t, await login(app, 'set-as-nfd', nfd, 'json'), 'set as NFD, given as NFD')
    assertSuccess(t, await login(app, 'set-as-nfc', nfd), 'set as NFC, given as NFD')
    assertFailed(t, await login(app, 'set-as-nfc', 'Cafe creme'), 'without the accents it is another password')
  })

  t.test('case matters', async (t) => {
    assertSuccess(t, await login(app, 'case-user', 'CorrectHorse'), 'as set')
    for (const other of ['correcthorse', 'CORRECTHORSE', 'correctHorse', 'CorrectHorse ', ' CorrectHorse']) {
      assertFailed(t, await login(app, 'case-user', other), JSON.stringify(other))
    }
  })
})

t.test('bounded queue', async (t) => {
  /** A task that can be ended from outside. */
  const gate = (): { promise: Promise<void>, open: () => void } => {
    let open = (): void => {}
    const promise = new Promise<void>((resolve) => { open = resolve })
    return { promise, open }
  }

  t.test('never more than `concurrency` tasks at once; every task runs', async (t) => {
    const queue = createBoundedQueue(2, 10)
    let running = 0
    let highest = 0
    const results = await Promise.all(Array.from({ length: 8 }, async (_, i) => await queue.run(async () => {
      running++
      highest = Math.max(highest, running)
      await sleep(10)
      running--
      return i
    })))
    t.same(results, [0, 1, 2, 3, 4, 5, 6, 7], 'each task\'s own result')
    t.equal(highest, 2, 'at most two at once')
    t.equal(queue.depth(), 0, 'nothing left running or waiting')
  })

  t.test('waiting tasks start in the order they came', async (t) => {
    const queue = createBoundedQueue(1, 10)
    const started: number[] = []
    await Promise.all(Array.from({ length: 6 }, async (_, i) => await queue.run(async () => {
      started.push(i)
      await sleep(1)
    })))
    t.same(started, [0, 1, 2, 3, 4, 5])
  })

  t.test('beyond maxQueued waiting tasks, a task is refused at once with 503 and Retry-After: 1', async (t) => {
    const queue = createBoundedQueue(1, 2)
    const first = gate()
    const running = queue.run(async () => { await first.promise; return 'first' })
    const waiting = [queue.run(async () => 'second'), queue.run(async () => 'third')]
    t.equal(queue.depth(), 3, 'one running, two waiting')
    const refused = await rejection(queue.run(async () => 'fourth'))
    t.ok(refused instanceof StatusError, 'a StatusError')
    t.match(refused, { status: 503, httpStatus: 503, message: 'Service Unavailable', headers: { 'retry-after': '1' } })
    t.equal(queue.depth(), 3, 'the refused task took no place')
    first.open()
    t.same(await Promise.all([running, ...waiting]), ['first', 'second', 'third'], 'the queued ones still run')
    t.equal(await queue.run(async () => 'later'), 'later', 'room again once the queue drained')
    t.equal(queue.depth(), 0)
  })

  t.test('maxQueued 0: only the running tasks, no waiting', async (t) => {
    const queue = createBoundedQueue(1, 0)
    const first = gate()
    const running = queue.run(async () => { await first.promise })
    t.match(await rejection(queue.run(async () => {})), { status: 503 }, 'a second task is refused')
    first.open()
    await running
    t.equal(await queue.run(async () => 1), 1)
  })

  t.test('a task that fails gives its slot back', async (t) => {
    const queue = createBoundedQueue(1, 1)
    const failing = queue.run(async () => { await sleep(5); throw new Error('boom') })
    const next = queue.run(async () => 'next')
    t.match(await rejection(failing), { message: 'boom' }, 'its error reaches its caller')
    t.equal(await next, 'next', 'the waiting task ran')
    t.equal(queue.depth(), 0)
  })
})

t.test('a login flood over the hashing queue: 503 with Retry-After, never a 500, and Authenticate keeps answering', async (t) => {
  const testApp = await buildTestApp(t, 'real', {
    hashing: { concurrency: 1, maxQueued: 1 }
  })
  const { app } = testApp
  await Promise.all([testApp.addUser('flood', 'right'), testApp.addUser('holder', 'right')])
  const session = await login(app, 'holder', 'right')
  assertSuccess(t, session, 'a token to authenticate with')
  const { token } = session.json<{ token: string }>()

  const finished: number[] = []
  const flood = Array.from({ length: 12 }, async (_, i) => {
    const res = await login(app, i % 3 === 0 ? 'flood-unknown' : 'flood', i % 2 === 0 ? 'right' : 'wrong')
    finished.push(performance.now())
    return res
  })
  await sleep(0)
  const authenticate = await app.inject({ method: 'GET', url: `/auth/Authenticate/${token}` })
  const authenticatedAt = performance.now()
  const answers = await Promise.all(flood)

  t.equal(authenticate.statusCode, 200, 'Authenticate during the flood: HTTP 200')
  t.match(authenticate.body, /^\{"status":0,"message":"Success"/, 'Authenticate: Success')
  t.ok(authenticatedAt < Math.max(...finished), 'Authenticate answered before the flood was through')
  const statuses = answers.map((res) => res.statusCode)
  t.comment(`flood answers: ${statuses.join(' ')}`)
  t.notOk(statuses.some((status) => status >= 500 && status !== 503), 'never a 500')
  t.ok(statuses.every((status) => [200, 401, 503].includes(status)), 'only 200, 401 or 503')
  const refused = answers.filter((res) => res.statusCode === 503)
  t.ok(refused.length >= 1, `${refused.length} of 12 refused with 503`)
  t.ok(answers.length - refused.length >= 2, 'the running and the queued hash were answered')
  for (const res of refused) {
    t.equal(res.body, BODY.unavailable, '503: Service Unavailable')
    t.equal(res.headers['retry-after'], '1', '503: Retry-After: 1')
  }
  assertSuccess(t, await login(app, 'flood', 'right'), 'after the flood a login works')
})
