import { Type } from 'typebox'
import { ConfigError } from '../config-error.js'
import { variables, type Env, type Variables } from '../variables.js'

/** The directory federated accounts log in through (src/federation); how it works: docs/federation.md. */
export const FederationSchema = Type.Object({
  AUTH_LDAP_URL: Type.Optional(Type.String({ format: 'uri', pattern: '^ldaps?://[^\\s/]+/?$', expected: 'ldap://host[:port] or ldaps://host[:port]', docDefault: 'unset: federation off', description: 'the directory: `ldap://` or `ldaps://`, host and port' })),
  AUTH_LDAP_BIND_DN: Type.Optional(Type.String({ description: 'a DN template with `{username}` (bind as the user), or the service account\'s DN (with `AUTH_LDAP_SEARCH_BASE`); required with `AUTH_LDAP_URL`' })),
  AUTH_LDAP_BIND_PASSWORD: Type.Optional(Type.String({ writeOnly: true, verbatim: true, description: 'the service account\'s password (search mode)' })),
  AUTH_LDAP_SEARCH_BASE: Type.Optional(Type.String({ description: 'where to find the user (search mode)' })),
  AUTH_LDAP_SEARCH_FILTER: Type.String({ default: '(uid={username})', pattern: '^\\([\\s\\S]*\\{username\\}[\\s\\S]*\\)$', expected: 'a parenthesized filter holding {username}, e.g. (uid={username})', description: 'how to find the user (search mode)' }),
  AUTH_LDAP_USERNAME_ATTRIBUTE: Type.String({ default: 'uid', pattern: '^[A-Za-z][A-Za-z0-9-]{0,63}$', expected: 'an attribute name such as uid', description: 'the entry\'s attribute that names the account: read back after the bind, canonicalized, it is the account (never the name typed)' }),
  AUTH_LDAP_STARTTLS: Type.Boolean({ default: false, description: 'StartTLS on an `ldap://` connection' }),
  AUTH_LDAP_TLS_CA_FILE: Type.Optional(Type.String({ description: 'the CA certificate (PEM) the directory\'s certificate is checked against' })),
  AUTH_LDAP_TLS_REJECT_UNAUTHORIZED: Type.Boolean({ default: true, description: '`false` accepts a certificate that does not check out (a test directory only)' }),
  AUTH_LDAP_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 60_000, default: 5000, description: 'connect and operation timeout' }),
  AUTH_LDAP_AUTO_PROVISION: Type.Boolean({ default: false, description: 'a directory user with no account gets a federated one at the first successful login' }),
  AUTH_LDAP_GROUP_SEARCH_MODE: Type.Enum(['none', 'memberof', 'filter'], { default: 'none', caseInsensitive: true, description: 'how a federated account\'s directory groups are read at each Login ([groups from the directory](federation.md#groups-from-the-directory)): `none` reads none; `memberof`, the person\'s `memberOf` values; `filter`, a search under `AUTH_LDAP_GROUP_SEARCH_BASE`' }),
  AUTH_LDAP_GROUP_SEARCH_BASE: Type.Optional(Type.String({ description: 'where the groups are searched (`filter` mode, where it is required)' })),
  AUTH_LDAP_GROUP_FILTER: Type.String({ default: '(|(member={dn})(uniqueMember={dn})(memberUid={username}))', pattern: '^\\([\\s\\S]*\\{(dn|username)\\}[\\s\\S]*\\)$', expected: 'a parenthesized filter holding {dn} or {username}, e.g. (member={dn})', description: 'which groups hold the person (`filter` mode): `{dn}` is the person\'s DN, `{username}` the name the directory gives (both escaped)' }),
  AUTH_LDAP_GROUP_NAME_ATTRIBUTE: Type.String({ default: 'cn', pattern: '^[A-Za-z][A-Za-z0-9-]{0,63}$', expected: 'an attribute name such as cn', description: 'the group entry\'s attribute that names it; mapped to a group name here (`Domain Admins` → `domain-admins`)' })
}, { $id: 'federation', title: 'Directory (LDAP)', description: 'Federated accounts log in through an LDAP directory ([federation](federation.md)).' })

/** How a person's directory groups are read after their bind (AUTH_LDAP_GROUP_*). */
export type LdapGroupsConfig =
  /** No groups read: a federated account has its local groups only. */
  | { mode: 'none' }
  /** The person's `memberOf` DNs; each named by its first RDN, or by its entry's `nameAttribute`. */
  | { mode: 'memberof', nameAttribute: string }
  /** The groups a search under `searchBase` finds with `filter` (`{dn}`, `{username}`), named by `nameAttribute`. */
  | { mode: 'filter', nameAttribute: string, searchBase: string, filter: string }

export type LdapConfig = {
  url: string
  timeoutMs: number
  /** The attribute that names the user (AUTH_LDAP_USERNAME_ATTRIBUTE); `uid` when absent. */
  usernameAttribute?: string
  tls: { caFile: string | undefined, rejectUnauthorized: boolean, startTls: boolean }
  /** How the person's groups are read (AUTH_LDAP_GROUP_*); none when absent. */
  groups?: LdapGroupsConfig
} & (
  /** Bind straight as the user: the DN comes from a template with `{username}`. */
  | { mode: 'template', userDnTemplate: string }
  /** Find the user's DN with a service account, then bind as the user. */
  | { mode: 'search', bindDn: string, bindPassword: string, searchBase: string, searchFilter: string }
)

export interface FederationSettings {
  /** The directory federated accounts log in through; undefined: federation off. */
  ldap: LdapConfig | undefined
  /** A directory user with no local account gets one (federated) at the first successful login. */
  ldapAutoProvision: boolean
}

const SEARCH_ONLY = ['AUTH_LDAP_BIND_DN', 'AUTH_LDAP_SEARCH_BASE', 'AUTH_LDAP_SEARCH_FILTER', 'AUTH_LDAP_BIND_PASSWORD'] as const
const GROUP_SETTINGS = ['AUTH_LDAP_GROUP_SEARCH_MODE', 'AUTH_LDAP_GROUP_SEARCH_BASE', 'AUTH_LDAP_GROUP_FILTER', 'AUTH_LDAP_GROUP_NAME_ATTRIBUTE'] as const
const FILTER_ONLY = ['AUTH_LDAP_GROUP_SEARCH_BASE', 'AUTH_LDAP_GROUP_FILTER'] as const

/** The group settings, each refused where it would do nothing (a setting silently ignored is a setting believed). */
function groupsConfig (vars: Variables<typeof FederationSchema.properties>): LdapGroupsConfig {
  const mode = vars.read('AUTH_LDAP_GROUP_SEARCH_MODE')
  if (mode !== 'filter') {
    const filterOnly = FILTER_ONLY.find((name) => vars.given(name))
    if (filterOnly !== undefined) throw new ConfigError(filterOnly, 'is read only with AUTH_LDAP_GROUP_SEARCH_MODE=filter')
  }
  if (mode === 'none') {
    if (vars.given('AUTH_LDAP_GROUP_NAME_ATTRIBUTE')) throw new ConfigError('AUTH_LDAP_GROUP_NAME_ATTRIBUTE', 'is read only with AUTH_LDAP_GROUP_SEARCH_MODE=memberof or filter')
    return { mode }
  }
  const nameAttribute = vars.read('AUTH_LDAP_GROUP_NAME_ATTRIBUTE')
  if (mode === 'memberof') return { mode, nameAttribute }
  const searchBase = vars.read('AUTH_LDAP_GROUP_SEARCH_BASE')
  if (searchBase === undefined) throw new ConfigError('AUTH_LDAP_GROUP_SEARCH_BASE', 'is required with AUTH_LDAP_GROUP_SEARCH_MODE=filter: where the groups are searched')
  return { mode, nameAttribute, searchBase, filter: vars.read('AUTH_LDAP_GROUP_FILTER') }
}

function ldapConfig (env: Env): LdapConfig | undefined {
  const vars = variables(FederationSchema, env)
  const url = vars.read('AUTH_LDAP_URL')
  if (url === undefined) {
    const others = [...SEARCH_ONLY, ...GROUP_SETTINGS].filter((name) => vars.given(name))
    if (others.length > 0) throw new ConfigError(others[0] ?? 'AUTH_LDAP_URL', 'needs AUTH_LDAP_URL')
    return undefined
  }
  const common = {
    url,
    usernameAttribute: vars.read('AUTH_LDAP_USERNAME_ATTRIBUTE'),
    timeoutMs: vars.read('AUTH_LDAP_TIMEOUT_MS'),
    tls: {
      caFile: vars.read('AUTH_LDAP_TLS_CA_FILE'),
      rejectUnauthorized: vars.read('AUTH_LDAP_TLS_REJECT_UNAUTHORIZED'),
      startTls: vars.read('AUTH_LDAP_STARTTLS')
    },
    groups: groupsConfig(vars)
  }
  const bindDn = vars.read('AUTH_LDAP_BIND_DN')
  const searchBase = vars.read('AUTH_LDAP_SEARCH_BASE')
  if (bindDn === undefined) throw new ConfigError('AUTH_LDAP_BIND_DN', 'is required with AUTH_LDAP_URL: a DN template with {username}, or a service account with AUTH_LDAP_SEARCH_BASE')
  if (searchBase === undefined) {
    if (!bindDn.includes('{username}')) throw new ConfigError('AUTH_LDAP_BIND_DN', 'without AUTH_LDAP_SEARCH_BASE it is a template and must hold {username}')
    return { ...common, mode: 'template', userDnTemplate: bindDn }
  }
  const bindPassword = vars.read('AUTH_LDAP_BIND_PASSWORD')
  if (bindPassword === undefined) throw new ConfigError('AUTH_LDAP_BIND_PASSWORD', 'is required for the search mode (AUTH_LDAP_SEARCH_BASE)')
  return { ...common, mode: 'search', bindDn, bindPassword, searchBase, searchFilter: vars.read('AUTH_LDAP_SEARCH_FILTER') }
}

export function readFederation (env: Env): FederationSettings {
  return { ldap: ldapConfig(env), ldapAutoProvision: variables(FederationSchema, env).read('AUTH_LDAP_AUTO_PROVISION') }
}
