import t, { type Test } from 'tap'
import { createLdapDirectory } from '../../src/federation/ldap-directory.js'
import { loadConfig } from '../../src/config/config.js'
import { buildTestApp } from '../support/app.js'
import { rejection } from '../support/rejection.js'
import { searchMode, startDirectory, templateMode } from '../support/slapd.js'

t.test('against a real slapd', async (t) => {
  const directory = await startDirectory(t)

  for (const [mode, make] of [['template', templateMode], ['search', searchMode]] as const) {
    t.test(`${mode} mode: the directory decides`, async (t) => {
      const dir = createLdapDirectory(make(directory))
      t.equal(await dir.verify('alice', 'alice-directory-pw'), true, 'right password')
      t.equal(await dir.verify('alice', 'alice-directory-pW'), false, 'wrong password')
      t.equal(await dir.verify('alice', ''), false, 'an empty password is no unauthenticated bind')
      t.equal(await dir.verify('nobody', 'alice-directory-pw'), false, 'unknown user')
      t.equal(await dir.verify('o,brien', 'obrien-directory-pw'), true, 'a comma in a name is escaped, not refused')
    })

    t.test(`${mode} mode: specials in a username cannot widen a search or change the DN`, async (t) => {
      const dir = createLdapDirectory(make(directory))
      const attempts: Array<[string, string]> = [
        ['*', 'alice-directory-pw'],
        ['a*', 'alice-directory-pw'],
        ['al*', 'alice-directory-pw'],
        ['alice)(uid=*', 'alice-directory-pw'],
        ['*)(|(uid=*', 'alice-directory-pw'],
        ['alice\\', 'alice-directory-pw'],
        ['alice\u0000', 'alice-directory-pw'],
        ['(uid=alice)', 'alice-directory-pw'],
        ['alice,ou=people', 'alice-directory-pw'],
        ['x,ou=services', 'reader-secret'],
        ['reader,ou=services,dc=example,dc=org', 'reader-secret'],
        ['*', 'reader-secret'],
        ['admin', 'alice-directory-pw']
      ]
      for (const [username, password] of attempts) {
        t.equal(await dir.verify(username, password), false, JSON.stringify(username))
      }
    })
  }

  t.test('a directory that cannot be reached is a 503 value, with no LDAP detail for the client', async (t) => {
    const dir = createLdapDirectory({ ...templateMode(directory), url: 'ldap://127.0.0.1:1', timeoutMs: 500 })
    t.match(await rejection(dir.verify('alice', 'alice-directory-pw')), { status: 503, message: 'Service Unavailable' })
  })

  t.test('the service: federated accounts log in through the directory and get 24-hour tokens', async (t) => {
    const { app, addUser } = await buildTestApp(t, 'real', { ldap: searchMode(directory), maxFailedLogins: 3 })
    await app.accounts.add('alice', undefined, true)
    await addUser('dana', 'local-password')
    const login = async (username: string, password: string) => await app.inject({ method: 'POST', url: '/auth/Login', payload: { username, password } })

    const alice = await login('alice', 'alice-directory-pw')
    t.equal(alice.statusCode, 200)
    const expires = Date.parse(`${alice.json<{ expiration_date: string }>().expiration_date}Z`)
    t.ok(Math.abs(expires - (Date.now() + 86_400_000)) < 60_000, 'the federated lifetime, 24 h (not 12 h), however slow the machine')
    t.equal((await login('alice', 'wrong')).body, JSON.stringify({ status: 701, message: 'Login Failed' }))
    t.equal((await login('dana', 'local-password')).statusCode, 200, 'local accounts are untouched')
    const notProvisioned = await login('bob', 'bob-directory-pw')
    t.equal(notProvisioned.statusCode, 401, 'a directory user without an account: provisioning is off by default')
    t.equal(await app.backends.users.findByUsername('bob'), null)
    const row = await app.backends.users.findByUsername('alice')
    t.equal(row?.passwordHash, null, 'the directory password never reached the database')
  })

  t.test('just-in-time provisioning makes a federated account at the first successful login', async (t) => {
    const { app } = await buildTestApp(t, 'embedded', { ldap: templateMode(directory), ldapAutoProvision: true })
    const login = async (username: string, password: string) => await app.inject({ method: 'POST', url: '/auth/Login', payload: { username, password } })
    t.equal((await login('carol', 'wrong')).statusCode, 401)
    t.equal(await app.backends.users.findByUsername('carol'), null, 'no account for a failed login')
    t.equal((await login('carol', 'carol-directory-pw')).statusCode, 200)
    t.match(await app.backends.users.findByUsername('carol'), { federated: true, passwordHash: null, disabled: false })
    t.equal((await login('carol', 'carol-directory-pw')).statusCode, 200, 'and again')
    await app.accounts.setDisabled('carol', true)
    t.equal((await login('carol', 'carol-directory-pw')).statusCode, 401, 'a disabled account stays out, whatever the directory says')
  })

  t.test('directory down: 503, not 701, and not counted as a failure', async (t) => {
    const { app } = await buildTestApp(t, 'real', { ldap: { ...templateMode(directory), url: 'ldap://127.0.0.1:1', timeoutMs: 300 }, maxFailedLogins: 2 })
    await app.accounts.add('alice', undefined, true)
    for (let i = 0; i < 4; i++) {
      const answer = await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'alice', password: 'alice-directory-pw' } })
      t.equal(answer.statusCode, 503)
      t.same(answer.json(), { status: 503, message: 'Service Unavailable' }, 'no LDAP detail')
    }
    t.same(await app.backends.limiter.check('alice', '127.0.0.1'), { allowed: true }, 'no lockout from the outage')
  })
})

t.test('configuration', async (t: Test) => {
  t.equal(loadConfig({}).ldap, undefined, 'off by default')
  t.match(loadConfig({ AUTH_LDAP_URL: 'ldaps://dir.example:636', AUTH_LDAP_BIND_DN: 'uid={username},ou=people,dc=example,dc=org' }).ldap,
    { mode: 'template', url: 'ldaps://dir.example:636', userDnTemplate: 'uid={username},ou=people,dc=example,dc=org' })
  t.match(loadConfig({
    AUTH_LDAP_URL: 'ldap://dir:389',
    AUTH_LDAP_BIND_DN: 'cn=reader,dc=example,dc=org',
    AUTH_LDAP_BIND_PASSWORD: 's',
    AUTH_LDAP_SEARCH_BASE: 'ou=people,dc=example,dc=org'
  }).ldap, { mode: 'search', searchFilter: '(uid={username})' })
  const refused: Array<[Record<string, string>, string]> = [
    [{ AUTH_LDAP_BIND_DN: 'uid={username}' }, 'AUTH_LDAP_BIND_DN'],
    [{ AUTH_LDAP_URL: 'http://dir' }, 'AUTH_LDAP_URL'],
    [{ AUTH_LDAP_URL: 'ldap://dir' }, 'AUTH_LDAP_BIND_DN'],
    [{ AUTH_LDAP_URL: 'ldap://dir', AUTH_LDAP_BIND_DN: 'cn=fixed' }, 'AUTH_LDAP_BIND_DN'],
    [{ AUTH_LDAP_URL: 'ldap://dir', AUTH_LDAP_BIND_DN: 'cn=r', AUTH_LDAP_SEARCH_BASE: 'dc=x' }, 'AUTH_LDAP_BIND_PASSWORD'],
    [{ AUTH_LDAP_URL: 'ldap://dir', AUTH_LDAP_BIND_DN: 'cn=r', AUTH_LDAP_BIND_PASSWORD: 'p', AUTH_LDAP_SEARCH_BASE: 'dc=x', AUTH_LDAP_SEARCH_FILTER: 'uid=*' }, 'AUTH_LDAP_SEARCH_FILTER']
  ]
  for (const [env, variable] of refused) {
    let caught: unknown
    try { loadConfig(env) } catch (error) { caught = error }
    t.match(caught, { variable }, `${JSON.stringify(env)} names ${variable}`)
  }
})
