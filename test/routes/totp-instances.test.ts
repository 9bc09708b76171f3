import t, { type Test } from 'tap'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { promisify } from 'node:util'
import * as OTPAuth from 'otpauth'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app/app.js'
import { assembleBackends } from '../../src/app/backends.js'
import { migrate } from '../../src/core/migrate.js'
import { createRedisTokenStore } from '../../src/core/stores/redis/token-store.js'
import { fixtureAccounts } from '../support/app.js'
import { keyId } from '../../src/totp/sealed-secret.js'
import { testConfig } from '../support/config.js'
import { freshPostgresDatabase, patientPostgres } from '../../support/postgres.js'
import { freshRedisPrefix, requireRedis, TEST_REDIS_COMMAND_TIMEOUT_MS } from '../../support/redis.js'

/*
 * Two service instances on one Postgres and one Redis: a code accepted by one is
 * refused by the other, also when both get it at once; and a dump of the database holds no
 * TOTP secret in any encoding.
 */

const PASSWORD = 'a long enough passphrase 1'
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
const STEP_MS = 30_000

const url = await freshPostgresDatabase(t)
const prefix = await freshRedisPrefix(t)
const redisUrl = await requireRedis()
const totpKey = randomBytes(32)

async function instance (t: Test, keys: { totpKey: Buffer, totpPreviousKeys?: Buffer[] } = { totpKey }): Promise<FastifyInstance> {
  const config = testConfig({ redisKeyPrefix: prefix, ...keys })
  const database = patientPostgres(url)
  const tokens = createRedisTokenStore({ url: redisUrl, keyPrefix: prefix, denyTtlMs: 300_000, commandTimeoutMs: TEST_REDIS_COMMAND_TIMEOUT_MS })
  await tokens.ready()
  const backends = assembleBackends(config, { database, tokens })
  const app = await buildApp(config, { backends, logger: { level: 'silent' } })
  t.teardown(async () => {
    await app.close()
    await backends.close()
  })
  return app
}

async function login (app: FastifyInstance, otp?: string): Promise<number> {
  const res = await app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: new URLSearchParams({ username: 'grace', password: PASSWORD, ...(otp === undefined ? {} : { otp }) }).toString() })
  return Number(res.json().status)
}

const migrating = patientPostgres(url)
await migrate(migrating)
await migrating.close()
const a = await instance(t)
const b = await instance(t)
await fixtureAccounts(a).add('grace', PASSWORD, false)

// Not within 3 s of a step's end: the codes below stay in the steps they were made for.
const into = Date.now() % STEP_MS
if (into > STEP_MS - 3000) await new Promise((resolve) => setTimeout(resolve, STEP_MS - into + 100))

const token = String((await a.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: `username=grace&password=${encodeURIComponent(PASSWORD)}` })).json().token)
const begun = (await a.inject({ method: 'POST', url: '/auth/totp', headers: { authorization: `Bearer ${token}` }, payload: { current_password: PASSWORD } })).json<{ secret: string, otpauth_uri: string }>()
const generator = OTPAuth.URI.parse(begun.otpauth_uri) as OTPAuth.TOTP
const code = (offset: number): string => generator.generate({ timestamp: Date.now() + offset * STEP_MS })
// Confirmed on the other instance: the enrollment is the database's, not an instance's.
const confirmed = await b.inject({ method: 'POST', url: '/auth/totp/confirm', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, payload: JSON.stringify({ code: code(-1) }) })

t.test('a code is accepted once across instances', async (t) => {
  t.equal(confirmed.statusCode, 200, 'confirmed on instance B')
  t.equal(await login(a), 702, 'A: no code, 702')
  t.equal(await login(b), 702, 'B: no code, 702')
  const now = code(0)
  t.equal(await login(a, now), 0, 'A accepts the code')
  t.equal(await login(b, now), 701, 'B refuses the same code')
  t.equal(await login(a, now), 701, 'A refuses it again')
})

t.test('the same code at both instances at once: exactly one Success', async (t) => {
  const next = code(1)
  const answers = await Promise.all([login(a, next), login(b, next), login(a, next), login(b, next)])
  t.equal(answers.filter((status) => status === 0).length, 1, `one Success among ${answers.join(', ')}`)
  t.equal(answers.filter((status) => status === 701).length, 3, 'the others 701')
})

t.test('a dump of the database holds no TOTP secret', async (t) => {
  const { stdout } = await promisify(execFile)('pg_dump', ['--data-only', '--no-owner', url], { maxBuffer: 64 * 1024 * 1024 })
  const bytes = Buffer.from(generator.secret.buffer)
  t.match(stdout, /totp_factors/, 'the dump holds the factors table')
  t.match(stdout, /v1\.[0-9a-f]{8}\./, '... with the sealed secret')
  for (const [name, text] of [['base32', begun.secret], ['hex', bytes.toString('hex')], ['base64', bytes.toString('base64')], ['base64url', bytes.toString('base64url')]] as const) {
    t.notOk(stdout.toUpperCase().includes(text.toUpperCase()), `no ${name} of the secret`)
  }
  t.notOk(stdout.includes(totpKey.toString('base64')), 'nor the key')
})

t.test('key rotation: a new key with the old one as previous opens the secret and seals it again; then the new key alone works, an unrelated key does not', async (t) => {
  const newKey = randomBytes(32)
  await fixtureAccounts(a).add('iris', PASSWORD, false)
  const irisLogin = async (app: FastifyInstance, otp?: string): Promise<number> => Number((await app.inject({
    method: 'POST', url: '/auth/Login', headers: FORM, payload: new URLSearchParams({ username: 'iris', password: PASSWORD, ...(otp === undefined ? {} : { otp }) }).toString()
  })).json().status)
  const sealedWith = async (): Promise<string | undefined> => {
    const database = patientPostgres(url)
    try {
      const { rows } = await database.query<{ secret_sealed: string }>("SELECT f.secret_sealed FROM totp_factors f JOIN users u ON u.id = f.account_id WHERE u.username = 'iris'")
      return rows[0]?.secret_sealed.split('.')[1]
    } finally {
      await database.close()
    }
  }
  const into = Date.now() % STEP_MS
  if (into > STEP_MS - 3000) await new Promise((resolve) => setTimeout(resolve, STEP_MS - into + 100))
  const irisToken = String((await a.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: `username=iris&password=${encodeURIComponent(PASSWORD)}` })).json().token)
  const irisUri = (await a.inject({ method: 'POST', url: '/auth/totp', headers: { authorization: `Bearer ${irisToken}` }, payload: { current_password: PASSWORD } })).json<{ otpauth_uri: string }>().otpauth_uri
  const iris = OTPAuth.URI.parse(irisUri) as OTPAuth.TOTP
  const irisCode = (offset: number): string => iris.generate({ timestamp: Date.now() + offset * STEP_MS })
  t.equal((await a.inject({ method: 'POST', url: '/auth/totp/confirm', headers: { authorization: `Bearer ${irisToken}`, ...FORM }, payload: `code=${irisCode(-1)}` })).statusCode, 200)
  t.equal(await sealedWith(), keyId(totpKey), 'sealed with the first key')
  const unrelated = await instance(t, { totpKey: randomBytes(32) })
  const onlyNew = await instance(t, { totpKey: newKey })
  const rotating = await instance(t, { totpKey: newKey, totpPreviousKeys: [totpKey] })
  t.equal(await irisLogin(unrelated, irisCode(0)), 701, 'a key that never sealed it: 701')
  t.equal(await irisLogin(onlyNew, irisCode(0)), 701, 'the new key before the secret is sealed again: 701')
  t.equal(await irisLogin(rotating, irisCode(0)), 0, 'new key + previous: Success')
  t.equal(await sealedWith(), keyId(newKey), 'and the secret is sealed with the new key now')
  t.equal(await irisLogin(onlyNew, irisCode(1)), 0, 'the new key alone opens it from then on')
})
