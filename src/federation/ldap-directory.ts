import { readFileSync } from 'node:fs'
import { Client, InvalidCredentialsError, type Entry } from 'ldapts'
import { escapeDnValue, escapeFilterValue, fillTemplate } from './ldap-escape.js'
import { attributeValues } from './ldap-entry.js'
import { MEMBER_OF, readDirectoryGroups, type DirectoryLog } from './ldap-groups.js'
import { serviceUnavailable } from '../errors/status.js'
import { inSpan } from '../tracing/spans.js'
import type { LdapConfig } from '../config/parts/federation.js'
import type { AccountDirectory, DirectoryIdentity } from '../core/ports.js'

/**
 * Federated accounts check their password against the provider's directory by
 * binding to it as the user. Their passwords never reach our database.
 */
export interface Directory extends AccountDirectory {
  /** True when the directory accepts this user's password; false for a wrong password or an unknown user. 503 when it cannot be asked. */
  verify (username: string, password: string): Promise<boolean>
  /**
   * Who the directory says this is, when it accepts the password: the entry's username
   * attribute (uid) as read back after the bind, never the name typed (directories match
   * names ignoring case and surrounding spaces), and the groups it puts them in
   * (AUTH_LDAP_GROUP_SEARCH_MODE; ldap-groups.ts). Null for a wrong password, an unknown user,
   * or an entry without the attribute. 503 when it cannot be asked, groups included.
   */
  identify (username: string, password: string): Promise<DirectoryIdentity | null>
}

export type { LdapConfig, DirectoryLog }

export interface LdapDirectoryOptions {
  /** Where a directory group left out of a Login (its name maps to nothing here) is told; absent: a process warning. */
  log?: DirectoryLog | undefined
}

/** Without the service's log, a left-out group still reaches stderr: it is never dropped silently. */
const processWarnings: DirectoryLog = {
  warn: (object, message) => { process.emitWarning(`${message} ${JSON.stringify(object)}`, 'DirectoryGroupWarning') }
}

/** The password of this DN is never right: a bind as it costs what a failed real bind costs. */
const NO_SUCH_USER_RDN = 'cn=auth-token-service-no-such-user'

/** The directory's host for a span (never its URL's credentials, should one carry any). */
function hostOf (url: string): string {
  try {
    return new URL(url).hostname
  } catch {
    return ''
  }
}

export function createLdapDirectory (config: LdapConfig, options: LdapDirectoryOptions = {}): Directory {
  const tlsOptions = {
    rejectUnauthorized: config.tls.rejectUnauthorized,
    ...(config.tls.caFile === undefined ? {} : { ca: readFileSync(config.tls.caFile) })
  }

  const serverHost = hostOf(config.url)

  const connect = async (): Promise<Client> => {
    // ldapts speaks TLS from the start whenever tlsOptions are given: only for ldaps://.
    const client = new Client({
      url: config.url,
      timeout: config.timeoutMs,
      connectTimeout: config.timeoutMs,
      ...(config.url.startsWith('ldaps:') ? { tlsOptions } : {})
    })
    if (config.tls.startTls) await client.startTLS(tlsOptions)
    return client
  }

  /**
   * Binds as `dn`; false only for the directory's "invalid credentials", anything else is a failure
   * of the directory. Traced (tracing on) as `ldap.bind`, saying whose bind, never the DN or the password.
   */
  const bindAs = async (client: Client, dn: string, password: string, who: 'service' | 'user'): Promise<boolean> =>
    await inSpan('ldap.bind', { 'ldap.bind.as': who, 'server.address': serverHost }, async () => {
      try {
        await client.bind(dn, password)
        return true
      } catch (error) {
        if (error instanceof InvalidCredentialsError) return false
        throw error
      }
    })

  const attribute = config.usernameAttribute ?? 'uid'
  const groups = config.groups ?? { mode: 'none' }
  const log = options.log ?? processWarnings
  /** What the person's entry is read with: in `memberof` mode its groups come along, at no extra request. */
  const personAttributes = groups.mode === 'memberof' ? [attribute, MEMBER_OF] : [attribute]

  /** The user's entry: its DN, and (search mode) its names as the service account read them. */
  const userEntry = async (client: Client, username: string): Promise<Entry | undefined> => {
    if (config.mode === 'template') return { dn: fillTemplate(config.userDnTemplate, escapeDnValue(username)) }
    if (!await bindAs(client, config.bindDn, config.bindPassword, 'service')) throw new Error('the directory refused the service account (AUTH_LDAP_BIND_DN)')
    const { searchEntries } = await client.search(config.searchBase, {
      scope: 'sub',
      filter: fillTemplate(config.searchFilter, escapeFilterValue(username)),
      attributes: personAttributes,
      sizeLimit: 2
    })
    // Zero or several matches: no such user (a filter that matches two people names nobody).
    return searchEntries.length === 1 ? searchEntries[0] : undefined
  }

  /** The entry with its names, read back as the user now bound when the search did not bring them (template mode). */
  const readBack = async (client: Client, entry: Entry): Promise<Entry> => {
    if (attributeValues(entry, attribute).length > 0) return entry
    const { searchEntries } = await client.search(entry.dn, { scope: 'base', attributes: personAttributes, sizeLimit: 1 })
    return searchEntries[0] ?? entry
  }

  /**
   * The person's groups, on this connection after their bind. Template mode reads them as the
   * person (the only identity it has); search mode as the service account, bound again, since
   * directories commonly let a reader see groups that a person may not.
   */
  const groupsOf = async (client: Client, person: Entry, username: string): Promise<string[]> => {
    if (groups.mode === 'none') return []
    let asService = false
    const asReader = async (): Promise<void> => {
      if (config.mode !== 'search' || asService) return
      if (!await bindAs(client, config.bindDn, config.bindPassword, 'service')) throw new Error('the directory refused the service account (AUTH_LDAP_BIND_DN) reading groups')
      asService = true
    }
    return await inSpan('ldap.groups', { 'ldap.groups.mode': groups.mode, 'server.address': serverHost }, async () =>
      await readDirectoryGroups(client, { dn: person.dn, username, entry: person }, { config: groups, log, asReader }))
  }

  const identify = async (username: string, password: string): Promise<DirectoryIdentity | null> => {
    // An empty password would be an "unauthenticated bind", which many directories accept.
    if (password.length === 0) return null
    let client: Client | undefined
    try {
      client = await connect()
      const entry = await userEntry(client, username)
      // Unknown user: the same bind work as a wrong password, against a DN that cannot match.
      const bound = await bindAs(client, entry?.dn ?? `${NO_SUCH_USER_RDN},${config.mode === 'search' ? config.searchBase : 'dc=invalid'}`, password, 'user')
      if (!bound || entry === undefined) return null
      const person = await readBack(client, entry)
      // uid may hold several values: the first in code-point order, so the key never depends on which one was typed.
      const name = attributeValues(person, attribute).sort()[0]
      if (name === undefined) return null
      return { username: name, groups: await groupsOf(client, person, name) }
    } catch (error) {
      throw serviceUnavailable('directory', error)
    } finally {
      await client?.unbind().catch(() => {})
    }
  }

  return {
    identify,
    verify: async (username, password) => await identify(username, password) !== null
  }
}
