import t from 'tap'
import { ConfigError, loadConfig } from '../../src/config/config.js'

/* AUTH_LDAP_GROUP_*: what each mode reads, and every setting refused where it would do nothing. */

const TEMPLATE = { AUTH_LDAP_URL: 'ldap://directory:389', AUTH_LDAP_BIND_DN: 'uid={username},ou=people,dc=example,dc=org' }
const BASE = 'ou=groups,dc=example,dc=org'

t.test('the modes and their defaults', async (t) => {
  t.same(loadConfig(TEMPLATE).ldap?.groups, { mode: 'none' }, 'none by default: no groups read, as before')
  t.same(loadConfig({ ...TEMPLATE, AUTH_LDAP_GROUP_SEARCH_MODE: 'memberof' }).ldap?.groups, { mode: 'memberof', nameAttribute: 'cn' })
  t.same(loadConfig({ ...TEMPLATE, AUTH_LDAP_GROUP_SEARCH_MODE: 'MemberOf', AUTH_LDAP_GROUP_NAME_ATTRIBUTE: 'description' }).ldap?.groups,
    { mode: 'memberof', nameAttribute: 'description' }, 'the mode in any case')
  t.same(loadConfig({ ...TEMPLATE, AUTH_LDAP_GROUP_SEARCH_MODE: 'filter', AUTH_LDAP_GROUP_SEARCH_BASE: BASE }).ldap?.groups,
    { mode: 'filter', nameAttribute: 'cn', searchBase: BASE, filter: '(|(member={dn})(uniqueMember={dn})(memberUid={username}))' })
  t.match(loadConfig({ ...TEMPLATE, AUTH_LDAP_GROUP_SEARCH_MODE: 'filter', AUTH_LDAP_GROUP_SEARCH_BASE: BASE, AUTH_LDAP_GROUP_FILTER: '(&(objectClass=groupOfNames)(member={dn}))' }).ldap?.groups,
    { filter: '(&(objectClass=groupOfNames)(member={dn}))' })
  t.match(loadConfig({ ...TEMPLATE, AUTH_LDAP_GROUP_SEARCH_MODE: 'filter', AUTH_LDAP_GROUP_SEARCH_BASE: BASE, AUTH_LDAP_GROUP_FILTER: '(memberUid={username})' }).ldap?.groups,
    { filter: '(memberUid={username})' }, '{username} alone will do')
})

t.test('refusals: one line naming the variable', async (t) => {
  const refused: Array<[Record<string, string>, string, RegExp]> = [
    [{ AUTH_LDAP_GROUP_SEARCH_MODE: 'memberof' }, 'AUTH_LDAP_GROUP_SEARCH_MODE', /needs AUTH_LDAP_URL/],
    [{ AUTH_LDAP_GROUP_SEARCH_BASE: BASE }, 'AUTH_LDAP_GROUP_SEARCH_BASE', /needs AUTH_LDAP_URL/],
    [{ ...TEMPLATE, AUTH_LDAP_GROUP_SEARCH_MODE: 'member-of' }, 'AUTH_LDAP_GROUP_SEARCH_MODE', /expected one of none, memberof, filter, got "member-of"/],
    [{ ...TEMPLATE, AUTH_LDAP_GROUP_SEARCH_MODE: 'filter' }, 'AUTH_LDAP_GROUP_SEARCH_BASE', /is required with AUTH_LDAP_GROUP_SEARCH_MODE=filter/],
    [{ ...TEMPLATE, AUTH_LDAP_GROUP_SEARCH_BASE: BASE }, 'AUTH_LDAP_GROUP_SEARCH_BASE', /only with AUTH_LDAP_GROUP_SEARCH_MODE=filter/],
    [{ ...TEMPLATE, AUTH_LDAP_GROUP_SEARCH_MODE: 'memberof', AUTH_LDAP_GROUP_FILTER: '(member={dn})' }, 'AUTH_LDAP_GROUP_FILTER', /only with AUTH_LDAP_GROUP_SEARCH_MODE=filter/],
    [{ ...TEMPLATE, AUTH_LDAP_GROUP_NAME_ATTRIBUTE: 'cn' }, 'AUTH_LDAP_GROUP_NAME_ATTRIBUTE', /only with AUTH_LDAP_GROUP_SEARCH_MODE=memberof or filter/],
    [{ ...TEMPLATE, AUTH_LDAP_GROUP_SEARCH_MODE: 'filter', AUTH_LDAP_GROUP_SEARCH_BASE: BASE, AUTH_LDAP_GROUP_FILTER: '(objectClass=groupOfNames)' }, 'AUTH_LDAP_GROUP_FILTER', /holding \{dn\} or \{username\}/],
    [{ ...TEMPLATE, AUTH_LDAP_GROUP_SEARCH_MODE: 'filter', AUTH_LDAP_GROUP_SEARCH_BASE: BASE, AUTH_LDAP_GROUP_FILTER: 'member={dn}' }, 'AUTH_LDAP_GROUP_FILTER', /a parenthesized filter/],
    [{ ...TEMPLATE, AUTH_LDAP_GROUP_SEARCH_MODE: 'memberof', AUTH_LDAP_GROUP_NAME_ATTRIBUTE: 'cn;lang-en' }, 'AUTH_LDAP_GROUP_NAME_ATTRIBUTE', /an attribute name/]
  ]
  for (const [env, variable, problem] of refused) {
    let caught: unknown
    try { loadConfig(env) } catch (error) { caught = error }
    t.ok(caught instanceof ConfigError, `${JSON.stringify(env)} is refused`)
    t.match(caught, { variable, message: problem }, `naming ${variable}`)
    t.notOk(String((caught as Error).message).includes('\n'), 'on one line')
  }
})
