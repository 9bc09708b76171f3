import { badRequest } from '../errors/status.js'
import { reasons } from '../errors/reasons.js'
import { isGroupName, MAX_GROUPS_PER_ACCOUNT, sortedGroups } from './group-names.js'
import type { AuditActor } from './ports.js'
import type { AuditLog } from './stores/audit-log.js'
import type { GroupSource, GroupsSet, GroupStore } from './stores/group-store.js'
import type { TokenStore } from './stores/token-store.js'
import type { OutcomeOf } from './events.js'

/**
 * A change of an account's groups, as the admin API, the CLI and a federated Login make it:
 * Postgres first (the account's set from that source, its groups version raised), then every live
 * record of the account rewritten with the new set and announced (the token store's regroup), so
 * the next Authenticate, /auth/verify and introspection see it and caching guards within the
 * feed's bound. A removal is acknowledged only once replicated, as a revocation is. Audited, and
 * sent as the webhook `account.groups_changed`.
 */

/** The account's live API keys by hash, for their records to be rewritten (src/api-keys). */
export interface AccountKeyHashes {
  liveKeyHashes (accountId: string): Promise<string[]>
}

export interface GroupChanges {
  /**
   * Makes `names` the account's set from `source` (the other source's untouched). 400 for a name
   * outside the rule or too many; null when there is no such account. Pushed to the account's
   * live records when anything changed, and for a `local` set always (a retry after a 503 that left
   * Postgres changed and the records not).
   */
  set (username: string, source: GroupSource, names: readonly string[], actor: AuditActor): Promise<GroupsSet | null>
}

export interface GroupChangesDeps {
  store: GroupStore
  tokens: Pick<TokenStore, 'regroup'>
  audit: AuditLog
  keys?: AccountKeyHashes | undefined
}

/** The names checked and sorted, or a 400 saying which one is wrong. */
export function checkedGroups (names: readonly string[]): string[] {
  for (const name of names) {
    if (!isGroupName(name)) throw badRequest(reasons.groupNameNotValid())
  }
  const sorted = sortedGroups(names)
  if (sorted.length > MAX_GROUPS_PER_ACCOUNT) throw badRequest(reasons.tooManyGroups(MAX_GROUPS_PER_ACCOUNT))
  return sorted
}

export function createGroupChanges ({ store, tokens, audit, keys }: GroupChangesDeps): GroupChanges {
  return {
    async set (username, source, names, actor) {
      const checked = checkedGroups(names)
      const result = await store.set(username, source, checked)
      if (result === null) return null
      if (!result.changed && source === 'directory') return result
      const keyHashes = await keys?.liveKeyHashes(result.accountId) ?? []
      await tokens.regroup(result.accountId, result.after, result.version, keyHashes)
      if (result.changed) {
        audit.record({
          event: 'groups.change',
          username: result.username,
          accountId: result.accountId,
          ...actor,
          outcome: `${source === 'local' ? 'set' : 'directory'}:${checked.join(',')}` satisfies OutcomeOf<'account.groups_changed'>,
          groups: result.after
        })
      }
      return result
    }
  }
}
