import { readFileSync } from 'node:fs'
import { Client, InvalidCredentialsError } from 'ldapts'
import { escapeDnValue, escapeFilterValue, fillTemplate } from './ldap-escape.js'
import { serviceUnavailable } from '../http/status.js'

/**
 * Federated accounts check their password against the provider's directory by
 * binding to it as the user. Their passwords never reach our database.
 */
export interface Directory {
  /** True when the directory accepts this user's password; false for a wrong password or an unknown user. 503 when it cannot be asked. */
  verify (username: string, password: string): Promise<boolean>
}

export type LdapConfig = {
  url: string
  timeoutMs: number
  tls: { caFile: string | undefined, rejectUnauthorized: boolean, startTls: boolean }
} & (
  /** Bind straight as the user: the DN comes from a template with `{username}`. */
  | { mode: 'template', userDnTemplate: string }
  /** Find the user's DN with a service account, then bind as the user. */
  | { mode: 'search', bindDn: string, bindPassword: string, searchBase: string, searchFilter: string }
)

/** The password of this DN is never right: a bind as it costs what a failed real bind costs. */
const NO_SUCH_USER_RDN = 'cn=auth-token-service-no-such-user'

export function createLdapDirectory (config: LdapConfig): Directory {
  const tlsOptions = {
    rejectUnauthorized: config.tls.rejectUnauthorized,
    ...(config.tls.caFile === undefined ? {} : { ca: readFileSync(config.tls.caFile) })
  }

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

  /** Binds as `dn`; false only for the directory's "invalid credentials", anything else is a failure of the directory. */
  const bindAs = async (client: Client, dn: string, password: string): Promise<boolean> => {
    try {
      await client.bind(dn, password)
      return true
    } catch (error) {
      if (error instanceof InvalidCredentialsError) return false
      throw error
    }
  }

  const userDn = async (client: Client, username: string): Promise<string | undefined> => {
    if (config.mode === 'template') return fillTemplate(config.userDnTemplate, escapeDnValue(username))
    if (!await bindAs(client, config.bindDn, config.bindPassword)) throw new Error('the directory refused the service account (AUTH_LDAP_BIND_DN)')
    const { searchEntries } = await client.search(config.searchBase, {
      scope: 'sub',
      filter: fillTemplate(config.searchFilter, escapeFilterValue(username)),
      attributes: ['dn'],
      sizeLimit: 2
    })
    // Zero or several matches: no such user (a filter that matches two people names nobody).
    return searchEntries.length === 1 ? searchEntries[0]?.dn : undefined
  }

  return {
    async verify (username, password) {
      // An empty password would be an "unauthenticated bind", which many directories accept.
      if (password.length === 0) return false
      let client: Client | undefined
      try {
        client = await connect()
        const dn = await userDn(client, username)
        // Unknown user: the same bind work as a wrong password, against a DN that cannot match.
        return await bindAs(client, dn ?? `${NO_SUCH_USER_RDN},${config.mode === 'search' ? config.searchBase : 'dc=invalid'}`, password) && dn !== undefined
      } catch (error) {
        throw serviceUnavailable('directory', error)
      } finally {
        await client?.unbind().catch(() => {})
      }
    }
  }
}
