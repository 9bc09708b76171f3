import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { Redis } from 'ioredis'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { buildApp } from '../../src/app/app.js'
import { assembleBackends } from '../../src/app/backends.js'
import { createPostgresDatabase } from '../../src/db/postgres.js'
import { createRedisTokenStore } from '../../src/core/stores/redis/token-store.js'
import { buildTestApp } from '../support/app.js'
import { testConfig } from '../support/config.js'
import { freshRedisPrefix, keysUnder, requireRedis } from '../../support/redis.js'

/**
 * Brute-force protection through HTTP (security.md, Login; contract: 429): per-account
 * locks keyed on the normalized username whether or not the account exists, growing
 * locks, a per-client-IP limit, X-Forwarded-For believed only from trusted proxies,
 * every login pathway sharing the limits, and only real failures counting.
 */

type Reply = LightMyRequestResponse
type Style = 'query' | 'form' | 'json' | 'path'
const STYLES: readonly Style[] = ['query', 'form', 'json', 'path']

const BODY = {
  tooMany: '{"status":429,"message":"Too Many Requests"}',
  loginFailed: '{"status":701,"message":"Login Failed"}',
  unavailable: '{"status":503,"message":"Service Unavailable"}'
} as const

interface From {
  remoteAddress?: string
  forwardedFor?: string
}

function loginRequest (style: Style, username: string, password: string, from: From = {}): InjectOptions {
  const headers: Record<string, string> = {}
  if (from.forwardedFor !== undefined) headers['x-forwarded-for'] = from.forwardedFor
  const base = { method: 'POST' as const, remoteAddress: from.remoteAddress ?? '127.0.0.1' }
  const query = `username=${encodeURIComponent(username)}&password=${encodeURIComponent(password)}`
  switch (style) {
    case 'query':
      return { ...base, url: `/auth/Login?${query}`, headers }
    case 'form':
      return { ...base, url: '/auth/Login', headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, payload: query }
    case 'json':
      return { ...base, url: '/auth/Login', headers: { ...headers, 'content-type': 'application/json' }, payload: JSON.stringify({ username, password }) }
    case 'path':
      return { ...base, url: `/auth/Login/${encodeURIComponent(username)}/${encodeURIComponent(password)}`, headers }
  }
}

async function login (app: FastifyInstance, username: string, password: string, from: From = {}, style: Style = 'form'): Promise<Reply> {
  return await app.inject(loginRequest(style, username, password, from))
}

function assertFailed (t: Test, res: Reply, what: string): void {
  t.equal(res.statusCode, 401, `${what}: HTTP 401`)
  t.equal(res.body, BODY.loginFailed, `${what}: Login Failed`)
}

function assertSuccess (t: Test, res: Reply, what: string): void {
  t.equal(res.statusCode, 200, `${what}: HTTP 200`)
  t.match(res.body, /^\{"status":0,"message":"Success","token":/, `${what}: Success with a token`)
}

/** 429, the exact body, an integer Retry-After of 1..maxSeconds, and no cookie. Returns Retry-After. */
function assertTooMany (t: Test, res: Reply, maxSeconds: number, what: string): number {
  t.equal(res.statusCode, 429, `${what}: HTTP 429`)
  t.equal(res.body, BODY.tooMany, `${what}: exactly the Too Many Requests body`)
  const header = res.headers['retry-after']
  const seconds = Number(header)
  t.ok(typeof header === 'string' && /^\d+$/.test(header) && seconds >= 1 && seconds <= maxSeconds,
    `${what}: Retry-After ${String(header)} is a whole number of seconds in 1..${maxSeconds}`)
  t.equal(res.headers['set-cookie'], undefined, `${what}: no cookie`)
  return seconds
}

async function keysUnderShared (prefix: string): Promise<string[]> {
  const redis = new Redis(await requireRedis())
  try {
    return await keysUnder(redis, prefix)
  } finally {
    redis.disconnect()
  }
}

const NFC = (s: string): string => s.normalize('NFC')
const NFD = (s: string): string => s.normalize('NFD')

t.test('real backends (Postgres, Redis)', async (t) => {
  t.test('failures through query, form, JSON and path style share one count; then even the right password gets 429 everywhere', async (t) => {
    const { app, addUser } = await buildTestApp(t, 'real', { maxFailedLogins: 4, lockoutSeconds: 30, maxLockoutSeconds: 60 })
    await Promise.all([addUser('victim', 'right'), addUser('bystander', 'right')])
    for (const [i, style] of STYLES.entries()) {
      assertFailed(t, await login(app, 'victim', `wrong${i}`, {}, style), `failure ${i + 1} by ${style}`)
    }
    for (const style of STYLES) {
      assertTooMany(t, await login(app, 'victim', 'right', {}, style), 30, `the right password by ${style} once locked`)
      assertTooMany(t, await login(app, 'victim', 'wrong', { remoteAddress: '10.0.0.77' }, style), 30, `a wrong password by ${style} from another address`)
    }
    assertSuccess(t, await login(app, 'bystander', 'right'), 'another account from the same address')
  })

  t.test('guesses sent in parallel cannot outrun the lock: N allowed means at most N checked', async (t) => {
    const { app, addUser } = await buildTestApp(t, 'real', { maxFailedLogins: 3, lockoutSeconds: 30, maxLockoutSeconds: 60 })
    await addUser('target', 'right')
    const answers = await Promise.all(Array.from({ length: 20 }, async (_, i) => await login(app, 'target', `guess${i}`)))
    const checked = answers.filter((res) => res.statusCode === 401).length
    const refused = answers.filter((res) => res.statusCode === 429).length
    t.ok(checked <= 3, `${checked} of 20 parallel guesses were checked (at most 3)`)
    t.equal(checked + refused, 20, 'every other guess was refused with 429')
    assertTooMany(t, await login(app, 'target', 'right'), 30, 'then even the right password')
  })

  t.test('N-1 failures are still answered 701, and a success before the limit resets the count', async (t) => {
    const { app, addUser } = await buildTestApp(t, 'real', { maxFailedLogins: 3, lockoutSeconds: 30, maxLockoutSeconds: 60 })
    await addUser('steady', 'right')
    for (let round = 1; round <= 3; round++) {
      assertFailed(t, await login(app, 'steady', 'wrong'), `round ${round}, failure 1`)
      assertFailed(t, await login(app, 'steady', 'wrong'), `round ${round}, failure 2`)
      assertSuccess(t, await login(app, 'steady', 'right'), `round ${round}: a success after N-1 failures`)
    }
    for (let i = 1; i <= 3; i++) assertFailed(t, await login(app, 'steady', 'wrong'), `failure ${i} of a full run`)
    assertTooMany(t, await login(app, 'steady', 'right'), 30, 'a full run of N failures still locks')
  })

  t.test('unknown usernames are counted too, keyed on the canonical form: NFC, NFD and other-case spellings share a counter', async (t) => {
    const { app, addUser } = await buildTestApp(t, 'real', { maxFailedLogins: 3, lockoutSeconds: 30, maxLockoutSeconds: 60 })
    const ghost = 'Zoë.Ångström'
    t.not(NFC(ghost), NFD(ghost), 'the two spellings differ as strings')
    assertFailed(t, await login(app, NFC(ghost), 'guess1'), 'unknown user, NFC, 1')
    assertFailed(t, await login(app, NFD(ghost), 'guess2', {}, 'json'), 'unknown user, NFD, 2')
    assertFailed(t, await login(app, NFC(ghost), 'guess3', {}, 'path'), 'unknown user, NFC, 3')
    assertTooMany(t, await login(app, NFD(ghost), 'guess4'), 30, 'unknown user locked, asked in NFD')
    assertTooMany(t, await login(app, NFC(ghost), 'guess4'), 30, 'unknown user locked, asked in NFC')
    assertTooMany(t, await login(app, NFC(ghost).toUpperCase(), 'guess4'), 30, 'unknown user locked, asked in capitals')
    assertFailed(t, await login(app, 'Zoe.Angstrom', 'guess'), 'a different (unaccented) name is not locked')

    // An existing account created from the NFD spelling, attacked in both spellings.
    await addUser(NFD('Renée'), 'right')
    assertFailed(t, await login(app, NFC('Renée'), 'wrong1'), 'account, NFC, 1')
    assertFailed(t, await login(app, NFD('Renée'), 'wrong2'), 'account, NFD, 2')
    assertFailed(t, await login(app, NFC('Renée'), 'wrong3'), 'account, NFC, 3')
    assertTooMany(t, await login(app, NFD('Renée'), 'right'), 30, 'the right password in NFD spelling')
    assertTooMany(t, await login(app, NFC('Renée'), 'right'), 30, 'the right password in NFC spelling')
  })

  t.test('per client IP: failures across many usernames limit that address only', async (t) => {
    const { app, addUser } = await buildTestApp(t, 'real', { maxFailedLogins: 10, maxFailedLoginsPerIp: 5, ipWindowSeconds: 60 })
    await addUser('member', 'right')
    const attacker = { remoteAddress: '10.1.0.1' }
    for (let i = 0; i < 5; i++) assertFailed(t, await login(app, `stuffed${i}`, 'password1', attacker, STYLES[i % 4]), `sprayed failure ${i + 1}`)
    assertTooMany(t, await login(app, 'stuffed99', 'password1', attacker), 60, 'a new username from the address')
    assertTooMany(t, await login(app, 'member', 'right', attacker), 60, 'even a right password from the address')
    assertSuccess(t, await login(app, 'member', 'right', { remoteAddress: '10.1.0.2' }), 'the same account from another address')
    assertFailed(t, await login(app, 'stuffed0', 'password1', { remoteAddress: '10.1.0.2' }), 'another address is counted on its own')
  })

  t.test('trustProxy off (default): a forged X-Forwarded-For does not change the client IP', async (t) => {
    const { app, addUser, config } = await buildTestApp(t, 'real', { maxFailedLogins: 10, maxFailedLoginsPerIp: 3, ipWindowSeconds: 60 })
    t.equal(config.trustProxy, false, 'the default')
    await addUser('member', 'right')
    for (let i = 0; i < 3; i++) {
      assertFailed(t, await login(app, `sprayed${i}`, 'x', { remoteAddress: '10.2.0.1', forwardedFor: `203.0.113.${i + 1}` }), `failure ${i + 1}, a new forged address each time`)
    }
    assertTooMany(t, await login(app, 'sprayed9', 'x', { remoteAddress: '10.2.0.1', forwardedFor: '203.0.113.200' }), 60, 'yet another forged address')
    assertTooMany(t, await login(app, 'member', 'right', { remoteAddress: '10.2.0.1', forwardedFor: '10.2.0.2' }), 60, 'forging a clean address')
    assertSuccess(t, await login(app, 'member', 'right', { remoteAddress: '10.2.0.2', forwardedFor: '10.2.0.1' }), 'the clean address itself, forging the limited one')
  })

  for (const trustProxy of [true, ['127.0.0.1']]) {
    t.test(`trustProxy ${JSON.stringify(trustProxy)}: X-Forwarded-For from the proxy selects the client IP`, async (t) => {
      const { app, addUser } = await buildTestApp(t, 'real', { maxFailedLogins: 10, maxFailedLoginsPerIp: 3, ipWindowSeconds: 60, trustProxy })
      await addUser('member', 'right')
      const viaProxy = (client: string): From => ({ remoteAddress: '127.0.0.1', forwardedFor: client })
      for (let i = 0; i < 3; i++) assertFailed(t, await login(app, `sprayed${i}`, 'x', viaProxy('203.0.113.5')), `failure ${i + 1} of one client behind the proxy`)
      assertTooMany(t, await login(app, 'member', 'right', viaProxy('203.0.113.5')), 60, 'that client is limited')
      assertSuccess(t, await login(app, 'member', 'right', viaProxy('203.0.113.6')), 'another client behind the same proxy is not')
      assertFailed(t, await login(app, 'sprayed9', 'x', viaProxy('203.0.113.6')), 'and its failures are its own')
      assertSuccess(t, await login(app, 'member', 'right', { remoteAddress: '127.0.0.1' }), 'the proxy\'s own address is not limited')
      if (Array.isArray(trustProxy)) {
        // A client that is not a trusted proxy cannot pick its address by header.
        const forged = (i: number): From => ({ remoteAddress: '10.3.0.9', forwardedFor: `198.51.100.${i}` })
        for (let i = 0; i < 3; i++) assertFailed(t, await login(app, `forger${i}`, 'x', forged(i)), `untrusted sender, failure ${i + 1}`)
        assertTooMany(t, await login(app, 'member', 'right', forged(50)), 60, 'an untrusted sender is counted on its own address')
      }
    })
  }

  t.test('Postgres down: Login answers 503 and the attempt is not counted', async (t) => {
    // One Redis prefix for both apps, so the working app sees every counter the broken one wrote.
    const prefix = await freshRedisPrefix(t)
    const limits = { maxFailedLogins: 3, lockoutSeconds: 60, maxLockoutSeconds: 120, maxFailedLoginsPerIp: 3, redisKeyPrefix: prefix }
    const config = testConfig(limits)
    const database = createPostgresDatabase({ connectionString: 'postgres://postgres@127.0.0.1:1/x', connectionTimeoutMillis: 300 })
    const tokens = createRedisTokenStore({ url: await requireRedis(), keyPrefix: prefix, denyTtlMs: 1000 })
    await tokens.ready()
    const backends = assembleBackends(config, { database, tokens })
    const broken = await buildApp(config, { backends, logger: { level: 'silent' } })
    t.teardown(async () => {
      await broken.close()
      await backends.close()
    })
    for (const [i, style] of [...STYLES, ...STYLES].entries()) {
      const res = await login(broken, 'victim', i % 2 === 0 ? 'wrong' : 'right', {}, style)
      t.equal(res.statusCode, 503, `attempt ${i + 1} by ${style}: HTTP 503`)
      t.equal(res.body, BODY.unavailable, `attempt ${i + 1}: Service Unavailable, not Login Failed`)
    }
    t.same((await keysUnderShared(prefix)).filter((key) => key.includes('lf:')), [], '8 attempts (over both limits) left no limiter key')

    const { app: working, addUser } = await buildTestApp(t, 'real', limits)
    await addUser('victim', 'right')
    assertSuccess(t, await login(working, 'victim', 'right'), 'the account and the address are not locked on a working app')
    for (let i = 1; i <= 3; i++) assertFailed(t, await login(working, 'victim', 'wrong'), `real failure ${i}`)
    t.ok((await keysUnderShared(prefix)).some((key) => key.includes('lf:l:')), 'real failures do write the shared counters (a lock key)')
    assertTooMany(t, await login(broken, 'victim', 'right'), 60, 'and the broken app sees that lock before it touches Postgres')
  })

  t.test('a lock ends after lockoutSeconds, however often it is tried; the next one doubles; a success resets that', async (t) => {
    const { app, addUser } = await buildTestApp(t, 'real', { maxFailedLogins: 2, lockoutSeconds: 1, maxLockoutSeconds: 4 })
    await Promise.all([addUser('patient', 'right'), addUser('repeat', 'right')])
    assertFailed(t, await login(app, 'repeat', 'wrong1'), 'repeat: failure 1')
    assertFailed(t, await login(app, 'repeat', 'wrong2'), 'repeat: failure 2, its first lock')
    assertFailed(t, await login(app, 'patient', 'wrong1'), 'patient: failure 1')
    assertFailed(t, await login(app, 'patient', 'wrong2'), 'patient: failure 2')
    const lockedAt = Date.now()
    t.equal(assertTooMany(t, await login(app, 'patient', 'right'), 1, 'the right password during the 1 s lock'), 1, 'Retry-After: 1')
    // More attempts, only in the first half of the lock (so a loaded machine cannot push them past its end).
    let attempts = 0
    while (attempts < 5 && Date.now() < lockedAt + 500) {
      const res = await login(app, 'patient', attempts % 2 === 0 ? 'right' : 'wrong', {}, STYLES[attempts % 4])
      attempts++
      assertTooMany(t, res, 1, `attempt ${attempts} while locked`)
      await sleep(80)
    }
    await sleep(Math.max(0, lockedAt + 1150 - Date.now()))
    assertSuccess(t, await login(app, 'patient', 'right'), `the right password works again once the lock ran out, despite ${attempts + 1} attempts`)

    assertFailed(t, await login(app, 'repeat', 'wrong3'), 'repeat: failure 1 after its first lock')
    assertFailed(t, await login(app, 'repeat', 'wrong4'), 'repeat: failure 2 after its first lock')
    t.equal(assertTooMany(t, await login(app, 'repeat', 'right'), 2, 'the second lock'), 2, 'Retry-After: 2 (doubled)')

    assertFailed(t, await login(app, 'patient', 'wrong3'), 'patient: failure 1 after its success')
    assertFailed(t, await login(app, 'patient', 'wrong4'), 'patient: failure 2 after its success')
    t.equal(assertTooMany(t, await login(app, 'patient', 'right'), 1, 'a lock after a success'), 1, 'Retry-After: 1 again (the success reset the level)')
  })
})

t.test('embedded backends (PGlite, in-process limiter)', async (t) => {
  // One app for both checks (a PGlite costs seconds); they use different names and addresses.
  const { app, addUser } = await buildTestApp(t, 'embedded', { maxFailedLogins: 3, lockoutSeconds: 30, maxLockoutSeconds: 60, maxFailedLoginsPerIp: 3, ipWindowSeconds: 60 })
  await Promise.all([addUser('victim', 'right'), addUser('member', 'right')])

  t.test('N failures lock the account, unknown or not, in either normalization form', async (t) => {
    const from = { remoteAddress: '10.4.0.1' }
    for (const [i, style] of (['query', 'json', 'path'] as const).entries()) assertFailed(t, await login(app, 'victim', 'wrong', from, style), `failure ${i + 1}`)
    assertTooMany(t, await login(app, 'victim', 'right', { remoteAddress: '10.4.0.2' }), 30, 'the right password once locked, from another address')
    assertFailed(t, await login(app, NFC('Zoë'), 'x', { remoteAddress: '10.4.0.3' }), 'unknown NFC 1')
    assertFailed(t, await login(app, NFD('Zoë'), 'x', { remoteAddress: '10.4.0.4' }), 'unknown NFD 2')
    assertFailed(t, await login(app, NFC('Zoë'), 'x', { remoteAddress: '10.4.0.5' }), 'unknown NFC 3')
    assertTooMany(t, await login(app, NFD('Zoë'), 'x', { remoteAddress: '10.4.0.6' }), 30, 'the unknown name is locked')
  })

  t.test('the per-IP limit ignores a forged X-Forwarded-For', async (t) => {
    for (let i = 0; i < 3; i++) assertFailed(t, await login(app, `sprayed${i}`, 'x', { remoteAddress: '10.5.0.1', forwardedFor: `203.0.113.${i}` }), `failure ${i + 1}`)
    assertTooMany(t, await login(app, 'member', 'right', { remoteAddress: '10.5.0.1', forwardedFor: '203.0.113.99' }), 60, 'limited despite the header')
    assertSuccess(t, await login(app, 'member', 'right', { remoteAddress: '10.5.0.2', forwardedFor: '10.5.0.1' }), 'another address')
  })
})
