import t from 'tap'
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { loadConfig } from '../../src/config/config.js'
import type { LdapGroupsConfig } from '../../src/config/parts/federation.js'
import { createCredentialCheck } from '../../src/core/auth/account-credentials.js'
import { createLdapDirectory, type DirectoryLog, type LdapConfig } from '../../src/federation/ldap-directory.js'
import { buildTestApp } from '../support/app.js'
import { rejection } from '../support/rejection.js'
import { addEntries, modifyDirectory, searchMode, startDirectory, templateMode, type Directory } from '../support/slapd.js'

/*
 * A person's directory groups at each identify, against a real slapd whose memberof overlay keeps
 * `memberOf` as groups change (test/fixtures/directory-groups.ldif): both ways of reading them,
 * under both ways of binding, the mapping to names here, a membership changed between two
 * Logins, and a failure to read them answered 503, never a Login without them.
 */

const GROUPS_FIXTURE = fileURLToPath(new URL('../fixtures/directory-groups.ldif', import.meta.url))
const PASSWORDS = { alice: 'alice-directory-pw', bob: 'bob-directory-pw', carol: 'carol-directory-pw', 'o,brien': 'obrien-directory-pw' }

/** The group settings as the loader makes them from the environment: the shipped defaults are the ones tested. */
function groupSettings (env: Record<string, string>): LdapGroupsConfig {
  const groups = loadConfig({ AUTH_LDAP_URL: 'ldap://directory', AUTH_LDAP_BIND_DN: 'uid={username},ou=people,dc=example,dc=org', ...env }).ldap?.groups
  if (groups === undefined) throw new Error('the loader made no group settings')
  return groups
}

function collectingLog (): { log: DirectoryLog, warnings: Array<{ object: object, message: string }> } {
  const warnings: Array<{ object: object, message: string }> = []
  return { warnings, log: { warn: (object, message) => { warnings.push({ object, message }) } } }
}

const BINDS = [['template', templateMode], ['search', searchMode]] as const
type GroupMode = 'memberof' | 'filter'

function settingsFor (directory: Directory, mode: GroupMode, more: Record<string, string> = {}): LdapGroupsConfig {
  return groupSettings(mode === 'memberof'
    ? { AUTH_LDAP_GROUP_SEARCH_MODE: 'memberof', ...more }
    : { AUTH_LDAP_GROUP_SEARCH_MODE: 'filter', AUTH_LDAP_GROUP_SEARCH_BASE: `ou=groups,${directory.suffix}`, ...more })
}

function member (directory: Directory, uid: string, group: string, change: 'add' | 'delete'): string {
  return [`dn: cn=${group},ou=groups,${directory.suffix}`, 'changetype: modify', `${change}: member`, `member: uid=${uid},ou=people,${directory.suffix}`, ''].join('\n')
}

t.test('against a real slapd with groups', async (t) => {
  const directory = await startDirectory(t, { groups: true })
  await addEntries(directory, await readFile(GROUPS_FIXTURE, 'utf8'))

  for (const [bind, make] of BINDS) {
    for (const mode of ['memberof', 'filter'] as const) {
      const ldap = (more?: Record<string, string>): LdapConfig => ({ ...make(directory), groups: settingsFor(directory, mode, more) })

      t.test(`${bind} bind, ${mode}: the person's groups, mapped to names here`, async (t) => {
        const { log, warnings } = collectingLog()
        const dir = createLdapDirectory(ldap(), { log })
        t.same(await dir.identify('alice', PASSWORDS.alice), { username: 'alice', groups: ['domain-admins', 'ops'] }, 'two groups; `Domain Admins` is domain-admins')
        t.same(await dir.identify('bob', PASSWORDS.bob), {
          username: 'bob',
          groups: mode === 'memberof' ? ['domain-admins', 'readers'] : ['auditors', 'builders', 'domain-admins', 'readers']
        }, mode === 'memberof' ? 'memberOf lists the groupOfNames' : 'the default filter also finds uniqueMember and memberUid')
        t.same(await dir.identify('o,brien', PASSWORDS['o,brien']), { username: 'o,brien', groups: [] }, 'in no group; a DN special in {dn} escaped')
        t.same(await dir.identify('ALICE', PASSWORDS.alice), { username: 'alice', groups: ['domain-admins', 'ops'] }, 'the name typed does not change the groups')
        t.equal(await dir.identify('alice', 'wrong'), null, 'a wrong password reads no groups')
        t.same(warnings, [], 'no group left out')
      })

      t.test(`${bind} bind, ${mode}: a person added to a group and removed from it, between two identifies`, async (t) => {
        const dir = createLdapDirectory(ldap(), { log: collectingLog().log })
        const groupsOf = async (): Promise<readonly string[] | undefined> => (await dir.identify('alice', PASSWORDS.alice))?.groups
        t.same(await groupsOf(), ['domain-admins', 'ops'], 'before')
        t.teardown(async () => { await modifyDirectory(directory, member(directory, 'alice', 'readers', 'delete')).catch(() => {}) })
        await modifyDirectory(directory, member(directory, 'alice', 'readers', 'add'))
        t.same(await groupsOf(), ['domain-admins', 'ops', 'readers'], 'added: seen at the next identify')
        await modifyDirectory(directory, member(directory, 'alice', 'readers', 'delete'))
        t.same(await groupsOf(), ['domain-admins', 'ops'], 'removed: gone at the next identify')
      })

      t.test(`${bind} bind, ${mode}: a group name that maps to nothing is logged, not dropped silently`, async (t) => {
        const { log, warnings } = collectingLog()
        const dir = createLdapDirectory(ldap(), { log })
        t.same(await dir.identify('carol', PASSWORDS.carol), { username: 'carol', groups: ['developpeurs'] }, '`Développeurs` goes without its accent')
        t.equal(warnings.length, 1, 'one line for the one group left out')
        t.match(warnings[0], { object: { directoryGroup: '!!!' }, message: /maps to no group name here/ }, 'naming the directory\'s group')
        const logged = JSON.stringify(warnings)
        t.notOk(logged.includes(PASSWORDS.carol), 'never the password')
        t.notOk(logged.includes('uid=carol'), 'nor the person\'s DN')
      })

      t.test(`${bind} bind, ${mode}: named by another attribute (AUTH_LDAP_GROUP_NAME_ATTRIBUTE)`, async (t) => {
        const { log, warnings } = collectingLog()
        const dir = createLdapDirectory(ldap({ AUTH_LDAP_GROUP_NAME_ATTRIBUTE: 'description' }), { log })
        // memberof: the DNs' first RDN is cn, so each group's entry is read for its description.
        t.same(await dir.identify('alice', PASSWORDS.alice), { username: 'alice', groups: ['administrators'] })
        t.match(warnings, [{ object: { directoryGroup: `cn=ops,ou=groups,${directory.suffix}`, attribute: 'description' }, message: /no value of AUTH_LDAP_GROUP_NAME_ATTRIBUTE/ }], 'a group without the attribute is logged too')
      })

      t.test(`${bind} bind, ${mode}: groups that cannot be read are a 503, never a Login without them`, async (t) => {
        const broken: LdapConfig = mode === 'filter'
          ? { ...make(directory), groups: settingsFor(directory, mode, { AUTH_LDAP_GROUP_SEARCH_BASE: `ou=nowhere,${directory.suffix}` }) }
          // memberOf names a group whose entry must be read for its name, and that nobody may read.
          : { ...make(directory), groups: settingsFor(directory, mode, { AUTH_LDAP_GROUP_NAME_ATTRIBUTE: 'description' }) }
        const person = mode === 'filter' ? 'bob' : 'admin'
        const password = mode === 'filter' ? PASSWORDS.bob : 'admin-directory-pw'
        const dir = createLdapDirectory(broken, { log: collectingLog().log })
        t.match(await rejection(dir.identify(person, password)), { status: 503, message: 'Service Unavailable' })
        t.equal(await dir.identify(person, 'wrong'), null, 'a wrong password is still a wrong password')
      })
    }
  }

  t.test('more groups than a token carries: a 503, never a cut list', async (t) => {
    const many = Array.from({ length: 101 }, (_, i) => [
      `dn: cn=many-${i},ou=groups,${directory.suffix}`, 'objectClass: groupOfNames', `cn: many-${i}`, `member: uid=many,ou=people,${directory.suffix}`, ''
    ].join('\n'))
    await addEntries(directory, [
      `dn: uid=many,ou=people,${directory.suffix}`, 'objectClass: inetOrgPerson', 'uid: many', 'cn: Many', 'sn: Many', 'userPassword: many-directory-pw', '',
      ...many
    ].join('\n'))
    for (const mode of ['memberof', 'filter'] as const) {
      const dir = createLdapDirectory({ ...searchMode(directory), groups: settingsFor(directory, mode) }, { log: collectingLog().log })
      t.match(await rejection(dir.identify('many', 'many-directory-pw')), { status: 503 }, mode)
    }
  })

  t.test('the credential check hands a directory Login its groups, and a local Login none', async (t) => {
    const ldap: LdapConfig = { ...templateMode(directory), groups: settingsFor(directory, 'memberof') }
    const { app, addUser } = await buildTestApp(t, 'embedded', { ldap, ldapAutoProvision: true })
    await addUser('dana', 'local-password')
    const { users, hasher } = app.backends
    const check = createCredentialCheck({ users, hasher, config: { ldapAutoProvision: true }, directory: createLdapDirectory(ldap, { log: collectingLog().log }) })
    t.match(await check('alice', PASSWORDS.alice, { account: 'alice', ip: '127.0.0.1' }), { ok: true, account: { username: 'alice', federated: true }, directoryGroups: ['domain-admins', 'ops'] })
    const local = await check('dana', 'local-password', { account: 'dana', ip: '127.0.0.1' })
    t.match(local, { ok: true, account: { username: 'dana' } })
    t.notOk('directoryGroups' in local, 'set only for a Login through the directory')
  })

  t.test('the service: Login through a directory whose groups cannot be read is a 503', async (t) => {
    const ldap: LdapConfig = { ...searchMode(directory), groups: settingsFor(directory, 'filter', { AUTH_LDAP_GROUP_SEARCH_BASE: `ou=nowhere,${directory.suffix}` }) }
    const { app } = await buildTestApp(t, 'embedded', { ldap, ldapAutoProvision: true })
    const login = await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'alice', password: PASSWORDS.alice } })
    t.equal(login.statusCode, 503)
    t.same(login.json(), { status: 503, message: 'Service Unavailable' }, 'no LDAP detail')
    t.equal(await app.backends.users.findByUsername('alice'), null, 'no account made from a Login that did not happen')
  })

  t.test('the service: a directory Login stores its groups beside the local ones; a change in the directory reaches the live tokens at the next Login', async (t) => {
    const ldap: LdapConfig = { ...templateMode(directory), groups: settingsFor(directory, 'memberof') }
    const { app } = await buildTestApp(t, 'real', { ldap, ldapAutoProvision: true })
    const login = async (): Promise<string> => {
      const answer = await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'alice', password: PASSWORDS.alice } })
      const token = answer.json<{ token?: string }>().token
      if (token === undefined) throw new Error(`no token: ${answer.body}`)
      return token
    }
    const groupsOf = async (token: string): Promise<unknown> => (await app.inject({ method: 'POST', url: '/auth/Authenticate', payload: { token } })).json<{ groups?: unknown }>().groups
    const first = await login()
    t.same(await groupsOf(first), ['domain-admins', 'ops'], 'the directory\'s groups, mapped')
    const version = async (): Promise<number | undefined> => (await app.backends.users.findByUsername('alice'))?.groupsVersion
    const versionBefore = await version()
    const again = await login()
    t.same(await groupsOf(again), ['domain-admins', 'ops'], 'a Login finding the same groups: the same set')
    t.equal(await version(), versionBefore, 'and no new groups version')
    await app.accounts.setGroups('alice', ['local-only'])
    t.same(await groupsOf(first), ['domain-admins', 'local-only', 'ops'], 'local groups stand beside them')
    const shown = await app.accounts.show('alice')
    t.same(shown.directoryGroups, ['domain-admins', 'ops'])

    t.teardown(async () => { await modifyDirectory(directory, member(directory, 'alice', 'readers', 'delete')).catch(() => {}) })
    await modifyDirectory(directory, member(directory, 'alice', 'readers', 'add'))
    const second = await login()
    t.same(await groupsOf(second), ['domain-admins', 'local-only', 'ops', 'readers'], 'added in the directory: the next Login has it')
    await modifyDirectory(directory, member(directory, 'alice', 'Domain Admins', 'delete'))
    t.teardown(async () => { await modifyDirectory(directory, member(directory, 'alice', 'Domain Admins', 'add')).catch(() => {}) })
    const third = await login()
    t.same(await groupsOf(third), ['local-only', 'ops', 'readers'], 'removed in the directory: gone at the next Login')
    t.same(await groupsOf(first), ['local-only', 'ops', 'readers'], 'and from the tokens issued before it')
    await app.backends.audit.flush()
    const events = await app.backends.audit.list({ username: 'alice', event: 'groups.change' })
    t.same(events.map((event) => event.outcome), ['directory:domain-admins,ops', 'set:local-only', 'directory:domain-admins,ops,readers', 'directory:ops,readers'],
      'each change audited once; a Login that finds the same set changes nothing')
  })
})
