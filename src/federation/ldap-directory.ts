import { readFileSync } from 'node:fs'
import { Client, InvalidCredentialsError, type Entry } from 'ldapts'
import { escapeDnValue, escapeFilterValue, fillTemplate } from './ldap-escape.js'
import { serviceUnavailable } from '../errors/status.js'
import { inSpan } from '../tracing/spans.js'
import type { LdapConfig } from '../config/parts/federation.js'

/**
 * Federated accounts check their password against the provider's directory by
 * binding to it as the user. Their passwords never reach our database.
 */
export interface Directory {
  /** True when the directory accepts this user's password; false for a wrong password or an unknown user. 503 when it cannot be asked. */
  verify (username: string, password: string): Promise<boolean>
  /**
   * Who the directory says this is, when it accepts the password: the entry's username
   * attribute (uid) as read back after the bind, never the name typed (directories match
   * names ignoring case and surrounding spaces). Null for a wrong password, an unknown user,
   * or an entry without the attribute. 503 when it cannot be asked.
   */
  identify (username: string, password: string): Promise<string | null>
}

export type { LdapConfig }

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

export function createLdapDirectory (config: LdapConfig): Directory {
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

  /** The user's entry: its DN, and (search mode) its names as the service account read them. */
  const userEntry = async (client: Client, username: string): Promise<Entry | undefined> => {
    if (config.mode === 'template') return { dn: fillTemplate(config.userDnTemplate, escapeDnValue(username)) }
    if (!await bindAs(client, config.bindDn, config.bindPassword, 'service')) throw new Error('the directory refused the service account (AUTH_LDAP_BIND_DN)')
    const { searchEntries } = await client.search(config.searchBase, {
      scope: 'sub',
      filter: fillTemplate(config.searchFilter, escapeFilterValue(username)),
      attributes: [attribute],
      sizeLimit: 2
    })
    // Zero or several matches: no such user (a filter that matches two people names nobody).
    return searchEntries.length === 1 ? searchEntries[0] : undefined
  }

  /** The entry's names, read back as the user now bound when the search did not bring them (template mode). */
  const namesOf = async (client: Client, entry: Entry): Promise<string[]> => {
    let found = entry[attribute]
    if (found === undefined) {
      const { searchEntries } = await client.search(entry.dn, { scope: 'base', attributes: [attribute], sizeLimit: 1 })
      found = searchEntries[0]?.[attribute]
    }
    const values = found === undefined ? [] : Array.isArray(found) ? found : [found]
    // uid may hold several values: the first in code-point order, so the key never depends on which one was typed.
    return values.map((value) => typeof value === 'string' ? value : value.toString('utf8')).sort()
  }

  const identify = async (username: string, password: string): Promise<string | null> => {
    // An empty password would be an "unauthenticated bind", which many directories accept.
    if (password.length === 0) return null
    let client: Client | undefined
    try {
      client = await connect()
      const entry = await userEntry(client, username)
      // Unknown user: the same bind work as a wrong password, against a DN that cannot match.
      const bound = await bindAs(client, entry?.dn ?? `${NO_SUCH_USER_RDN},${config.mode === 'search' ? config.searchBase : 'dc=invalid'}`, password, 'user')
      if (!bound || entry === undefined) return null
      return (await namesOf(client, entry))[0] ?? null
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
