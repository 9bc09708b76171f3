import type { Client, Entry } from 'ldapts'
import type { LdapGroupsConfig } from '../config/parts/federation.js'
import { GROUP_NAME_RULE, MAX_GROUPS_PER_ACCOUNT, mappedGroupName, sortedGroups } from '../core/group-names.js'
import { attributeValues, firstRdnValue } from './ldap-entry.js'
import { fillGroupFilter } from './ldap-escape.js'

/**
 * A person's groups as the directory keeps them (AUTH_LDAP_GROUP_*), read on the Login's
 * connection after the person's bind, and mapped to group names here. Every failure to read is
 * thrown (the directory's 503): a Login never goes on with groups it could not read. A group it
 * read but cannot name here is left out and logged, never dropped silently.
 */

/** Where a directory group left out of a Login is told: the service's log. */
export interface DirectoryLog {
  warn (object: object, message: string): void
}

/** The attribute, on the person's entry, that lists their groups' DNs (`memberof` mode). */
export const MEMBER_OF = 'memberOf'

/** The person whose groups are read, as the Login found them. */
export interface GroupMember {
  /** Their entry's DN, as the directory gave it. */
  dn: string
  /** The name the directory gives them (the username attribute), as read, not canonicalized: `memberUid` holds that. */
  username: string
  /** Their entry as read after the bind: with `memberOf` in `memberof` mode. */
  entry: Entry
}

export interface GroupReading {
  config: Exclude<LdapGroupsConfig, { mode: 'none' }>
  log: DirectoryLog
  /** Binds the connection as whoever reads groups (search mode: the service account again); before the first read. */
  asReader: () => Promise<void>
}

/** A directory's answer bigger than a token's record carries is refused rather than cut. */
function bounded<T> (groups: readonly T[]): readonly T[] {
  if (groups.length > MAX_GROUPS_PER_ACCOUNT) throw new Error(`the directory puts the person in ${groups.length} groups, more than ${MAX_GROUPS_PER_ACCOUNT}`)
  return groups
}

/** The name a group entry gives itself: the first value in code-point order, so several never make it flicker. */
function nameOf (entry: Entry, attribute: string): string | undefined {
  return attributeValues(entry, attribute).sort()[0]
}

/** The directory's names of the groups holding `person`; `undefined` for a group entry without the name attribute. */
async function directoryNames (client: Client, person: GroupMember, { config, asReader }: GroupReading): Promise<Array<{ dn: string, name: string | undefined }>> {
  if (config.mode === 'filter') {
    await asReader()
    // No sizeLimit: with one, ldapts hands back a cut list as if whole; a server's own limit is an error here.
    const { searchEntries } = await client.search(config.searchBase, {
      scope: 'sub',
      filter: fillGroupFilter(config.filter, person),
      attributes: [config.nameAttribute]
    })
    return bounded(searchEntries).map((entry) => ({ dn: entry.dn, name: nameOf(entry, config.nameAttribute) }))
  }
  const dns = bounded(attributeValues(person.entry, MEMBER_OF))
  // Most directories name a group by its RDN (`cn=Domain Admins,…`): read the entry only when it does not.
  const unread = dns.filter((dn) => firstRdnValue(dn, config.nameAttribute) === undefined)
  if (unread.length > 0) await asReader()
  return await Promise.all(dns.map(async (dn) => {
    const fromDn = firstRdnValue(dn, config.nameAttribute)
    if (fromDn !== undefined) return { dn, name: fromDn }
    const { searchEntries } = await client.search(dn, { scope: 'base', attributes: [config.nameAttribute], sizeLimit: 1 })
    const entry = searchEntries[0]
    // A group the person is in that the reader cannot see: not a group to leave out quietly.
    if (entry === undefined) throw new Error('a group in the person\'s memberOf could not be read')
    return { dn, name: nameOf(entry, config.nameAttribute) }
  }))
}

/** The person's directory groups as group names here: mapped, each once, sorted. */
export async function readDirectoryGroups (client: Client, person: GroupMember, reading: GroupReading): Promise<string[]> {
  const { log, config } = reading
  const names: string[] = []
  for (const { dn, name } of await directoryNames(client, person, reading)) {
    if (name === undefined) {
      log.warn({ directoryGroup: dn, attribute: config.nameAttribute }, 'a directory group has no value of AUTH_LDAP_GROUP_NAME_ATTRIBUTE: the Login goes on without it')
      continue
    }
    const ours = mappedGroupName(name)
    if (ours === undefined) log.warn({ directoryGroup: name }, `a directory group's name maps to no group name here (${GROUP_NAME_RULE}): the Login goes on without it`)
    else names.push(ours)
  }
  return sortedGroups(names)
}
