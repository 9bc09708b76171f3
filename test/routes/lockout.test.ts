import { randomBytes, randomInt } from 'node:crypto'
import t, { type Test } from 'tap'
import { buildTestApp } from '../support/app.js'
import { assertStatus, BODIES, form, FORM, setCookies, sleep, type Reply } from './support.js'

/**
 * 429 (contract, wire format): too many failed logins for the account or the client
 * IP, only failures counting, with a Retry-After. AUTH_MAX_FAILED_LOGINS consecutive
 * failures lock an account for AUTH_LOCKOUT_SECONDS; AUTH_MAX_FAILED_LOGINS_PER_IP
 * failures per AUTH_IP_WINDOW_SECONDS limit one client address.
 */

// Fresh names and addresses for every run: failure counters must not carry over from
// another test or an earlier run, wherever the limiter keeps them.
const RUN = randomBytes(4).toString('hex')
const user = (name: string): string => `${name}-${RUN}`
const net = `10.${randomInt(256)}.${randomInt(256)}`
const ip = (host: number): string => `${net}.${host}`

function loginFrom (remoteAddress: string, username: string, password: string) {
  return { method: 'POST' as const, url: '/auth/Login', headers: FORM, payload: form({ username, password }), remoteAddress }
}

function assertTooMany (t: Test, res: Reply, maxSeconds: number, what: string): number {
  assertStatus(t, res, 429, BODIES.tooManyRequests, what)
  const retryAfter = Number(res.headers['retry-after'])
  t.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= maxSeconds, `${what}: Retry-After ${String(res.headers['retry-after'])} is 1..${maxSeconds} s`)
  t.same(setCookies(res), [], `${what}: no cookie`)
  return retryAfter
}

t.test('consecutive failures lock the account, whatever the client address', async (t) => {
  const { app, addUser } = await buildTestApp(t, 'real', { maxFailedLogins: 3, lockoutSeconds: 30, maxLockoutSeconds: 120 })
  await Promise.all([addUser(user('victim'), 'right'), addUser(user('bystander'), 'right')])
  assertStatus(t, await app.inject(loginFrom(ip(1), user('victim'), 'wrong1')), 401, BODIES.loginFailed, 'failure 1')
  assertStatus(t, await app.inject(loginFrom(ip(2), user('victim'), 'wrong2')), 401, BODIES.loginFailed, 'failure 2')
  const third = await app.inject(loginFrom(ip(3), user('victim'), 'wrong3'))
  t.ok(third.body === BODIES.loginFailed || third.body === BODIES.tooManyRequests, 'failure 3: Login Failed (or already locked)')

  assertTooMany(t, await app.inject(loginFrom(ip(1), user('victim'), 'wrong4')), 30, 'a fourth wrong password')
  assertTooMany(t, await app.inject(loginFrom(ip(4), user('victim'), 'right')), 30, 'the right password while locked, from a new address')
  const legacy = await app.inject({ method: 'POST', url: `/auth/Login/${user('victim')}/right`, remoteAddress: ip(5) })
  assertTooMany(t, legacy, 30, 'legacy path login while locked')
  t.equal((await app.inject(loginFrom(ip(1), user('bystander'), 'right'))).statusCode, 200, 'another account from the same address is not locked')
})

t.test('the lock ends after Retry-After', async (t) => {
  const { app, addUser } = await buildTestApp(t, 'real', { maxFailedLogins: 2, lockoutSeconds: 1, maxLockoutSeconds: 4 })
  await addUser(user('victim2'), 'right')
  await app.inject(loginFrom(ip(11), user('victim2'), 'wrong1'))
  await app.inject(loginFrom(ip(11), user('victim2'), 'wrong2'))
  const retryAfter = assertTooMany(t, await app.inject(loginFrom(ip(11), user('victim2'), 'right')), 1, 'locked for the first lock time')
  await sleep(retryAfter * 1000 + 150)
  t.equal((await app.inject(loginFrom(ip(11), user('victim2'), 'right'))).statusCode, 200, 'after Retry-After the right password works again')
})

t.test('only failures count, and a success ends a run of failures', async (t) => {
  const { app, addUser } = await buildTestApp(t, 'real', { maxFailedLogins: 3, lockoutSeconds: 30, maxLockoutSeconds: 120, maxFailedLoginsPerIp: 100 })
  await addUser(user('steady'), 'right')
  for (let i = 0; i < 5; i++) {
    t.equal((await app.inject(loginFrom(ip(21), user('steady'), 'right'))).statusCode, 200, `success ${i + 1}: successes never lock`)
  }
  for (let round = 0; round < 3; round++) {
    assertStatus(t, await app.inject(loginFrom(ip(21), user('steady'), 'wrong')), 401, BODIES.loginFailed, `round ${round + 1}, failure 1`)
    assertStatus(t, await app.inject(loginFrom(ip(21), user('steady'), 'wrong')), 401, BODIES.loginFailed, `round ${round + 1}, failure 2`)
    t.equal((await app.inject(loginFrom(ip(21), user('steady'), 'right'))).statusCode, 200, `round ${round + 1}: two failures then a success`)
  }
})

t.test('too many failures from one client address: 429 for that address only', async (t) => {
  const { app, addUser } = await buildTestApp(t, 'real', { maxFailedLogins: 100, maxFailedLoginsPerIp: 3, ipWindowSeconds: 600 })
  await addUser(user('someone'), 'right')
  assertStatus(t, await app.inject(loginFrom(ip(31), user('nobody-1'), 'x')), 401, BODIES.loginFailed, 'failure 1 from one address')
  assertStatus(t, await app.inject(loginFrom(ip(31), user('nobody-2'), 'x')), 401, BODIES.loginFailed, 'failure 2 from that address')
  const third = await app.inject(loginFrom(ip(31), user('someone'), 'wrong'))
  t.ok(third.body === BODIES.loginFailed || third.body === BODIES.tooManyRequests, 'failure 3: Login Failed (or already limited)')
  assertTooMany(t, await app.inject(loginFrom(ip(31), user('nobody-3'), 'x')), 600, 'a fourth failure from the same address')
  assertStatus(t, await app.inject(loginFrom(ip(32), user('nobody-4'), 'x')), 401, BODIES.loginFailed, 'another address is not limited')
  t.equal((await app.inject(loginFrom(ip(32), user('someone'), 'right'))).statusCode, 200, 'the account itself is not locked')
})
