import { Type } from 'typebox'
import { ConfigError } from '../config-error.js'
import { variables, type Env } from '../variables.js'

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
  AUTH_LDAP_AUTO_PROVISION: Type.Boolean({ default: false, description: 'a directory user with no account gets a federated one at the first successful login' })
}, { $id: 'federation', title: 'Directory (LDAP)', description: 'Federated accounts log in through an LDAP directory ([federation](federation.md)).' })

export type LdapConfig = {
  url: string
  timeoutMs: number
  /** The attribute that names the user (AUTH_LDAP_USERNAME_ATTRIBUTE); `uid` when absent. */
  usernameAttribute?: string
  tls: { caFile: string | undefined, rejectUnauthorized: boolean, startTls: boolean }
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

function ldapConfig (env: Env): LdapConfig | undefined {
  const vars = variables(FederationSchema, env)
  const url = vars.read('AUTH_LDAP_URL')
  if (url === undefined) {
    const others = SEARCH_ONLY.filter((name) => vars.given(name))
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
    }
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
