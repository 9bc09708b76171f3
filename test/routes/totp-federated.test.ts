import t from 'tap'
import { randomBytes } from 'node:crypto'
import * as OTPAuth from 'otpauth'
import { buildApp } from '../../src/app/app.js'
import { assembleBackends } from '../../src/app/backends.js'
import { migrate } from '../../src/core/migrate.js'
import type { Directory } from '../../src/federation/ldap-directory.js'
import { createMemoryTokenStore } from '../../src/core/stores/memory/token-store.js'
import { fixtureAccounts } from '../support/app.js'
import { testConfig } from '../support/config.js'
import { freshPglite } from '../support/pglite.js'

/*
 * A federated account takes the same second factor after the directory's bind, and
 * enrolls it with the directory's password: the directory here is a stand-in that accepts one
 * password (test/federation/ has the real slapd).
 */

const DIRECTORY_PASSWORD = 'the directory knows this one'
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
const directory: Directory = {
  verify: async (_username, password) => password === DIRECTORY_PASSWORD,
  identify: async (username, password) => password === DIRECTORY_PASSWORD ? { username, groups: [] } : null
}

const config = testConfig({ totpKey: randomBytes(32) })
const database = await freshPglite()
await migrate(database)
const backends = { ...assembleBackends(config, { database, tokens: createMemoryTokenStore({ denyTtlMs: 1000 }) }), directory }
const app = await buildApp(config, { backends, logger: { level: 'silent' } })
t.teardown(async () => {
  await app.close()
  await backends.close()
})
await fixtureAccounts(app).add('hank', undefined, true)

const login = async (otp?: string) => (await app.inject({
  method: 'POST',
  url: '/auth/Login',
  headers: FORM,
  payload: new URLSearchParams({ username: 'hank', password: DIRECTORY_PASSWORD, ...(otp === undefined ? {} : { otp }) }).toString()
})).json<{ status: number, token?: string }>()

t.test('federated: the directory\'s bind, then the code', async (t) => {
  const first = await login()
  t.equal(first.status, 0, 'the directory alone before enrolling')
  const enrollment = async (currentPassword: string) =>
    await app.inject({ method: 'POST', url: '/auth/totp', headers: { authorization: `Bearer ${first.token ?? ''}`, ...FORM }, payload: new URLSearchParams({ current_password: currentPassword }).toString() })
  const refused = await enrollment('not the directory\'s')
  t.equal(refused.body, '{"status":701,"message":"Login Failed"}', 'enrolling: another password than the directory\'s is a failed Login')
  const begun = (await enrollment(DIRECTORY_PASSWORD)).json<{ otpauth_uri: string }>()
  const generator = OTPAuth.URI.parse(begun.otpauth_uri) as OTPAuth.TOTP
  const code = (offset: number): string => generator.generate({ timestamp: Date.now() + offset * 30_000 })
  const confirmed = await app.inject({ method: 'POST', url: '/auth/totp/confirm', headers: { authorization: `Bearer ${first.token ?? ''}`, ...FORM }, payload: `code=${code(-1)}` })
  t.equal(confirmed.statusCode, 200)
  t.equal((await login()).status, 702, 'directory password, no code: 702')
  const accepted = new Set([code(-1), code(0), code(1)])
  t.equal((await login(['000000', '111111', '222222', '333333'].find((candidate) => !accepted.has(candidate)))).status, 701, 'a wrong code: 701')
  t.equal((await login(code(1))).status, 0, 'directory password and code: Success')
  const wrongPassword = await app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: new URLSearchParams({ username: 'hank', password: 'not it', otp: code(1) }).toString() })
  t.equal(wrongPassword.json().status, 701, 'a wrong directory password with a code: 701')
})
