import type { TokenRecord } from '@auth-token-service/protocol/layout'

/** The record with these groups; none: no `groups` at all (as a Redis record of an account in none). */
export function withGroups (record: TokenRecord, groups: readonly string[]): TokenRecord {
  const { groups: _groups, ...rest } = record
  return groups.length === 0 ? rest : { ...rest, groups: [...groups] }
}

/**
 * The in-process store's last change of each account's groups (the Redis store's `<b>g<accountId>`):
 * a token or key written with an older version than a change already applied gets its groups.
 */
export class GroupChanges {
  private readonly changes = new Map<string, { version: number, groups: readonly string[] }>()

  /** Records a change; false when a later one is already applied (this one is then not). */
  record (accountId: string, groups: readonly string[], version: number): boolean {
    const last = this.changes.get(accountId)
    if (last !== undefined && last.version > version) return false
    this.changes.set(accountId, { version, groups: [...groups] })
    return true
  }

  /** The record as it must be written, having read the account at `groupsVersion` (undefined: not checked). */
  current (record: TokenRecord, groupsVersion: number | undefined): TokenRecord {
    const change = groupsVersion === undefined ? undefined : this.changes.get(record.accountId)
    if (change === undefined || change.version <= (groupsVersion ?? 0)) return record
    return withGroups(record, change.groups)
  }

  clear (): void {
    this.changes.clear()
  }
}
