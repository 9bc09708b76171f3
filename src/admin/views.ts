import type { AccountView } from '../core/accounts.js'
import { reasons, type AdminParameter } from '../errors/reasons.js'
import { badRequest } from '../errors/status.js'
import type { StoredAuditEvent } from '../core/stores/audit-log.js'
import { formatExpirationDate } from '../core/time.js'

/** What the admin API answers, from what the stores hold (api-contract.md, "Admin API"). */

/** A stored instant as the admin API writes it, or null. */
export const dateOrNull = (at: Date | null): string | null => at === null ? null : formatExpirationDate(at.getTime())

export function userView (account: AccountView) {
  return {
    username: account.username,
    kind: account.kind,
    totp: account.totp,
    federated: account.federated,
    disabled: account.disabled,
    locked_until: dateOrNull(account.lockedUntil),
    created: formatExpirationDate(account.createdAt.getTime()),
    last_login: dateOrNull(account.lastLoginAt),
    groups: account.groups,
    directory_groups: account.directoryGroups,
    email: account.email
  }
}

export function eventView (event: StoredAuditEvent) {
  return {
    time: event.occurredAt.toISOString(),
    event: event.event,
    username: event.username ?? null,
    account_id: event.accountId ?? null,
    client_ip: event.clientIp ?? null,
    user_agent: event.userAgent ?? null,
    outcome: event.outcome,
    credential: event.credential ?? null,
    actor: event.actor ?? null
  }
}

/*
 * Cursors are opaque to clients (base64url of where the page ended) and checked like any
 * parameter: a cursor that does not decode is a 400, never a query.
 */
export const invalid = (parameter: AdminParameter) => badRequest(reasons.adminParameterNotValid(parameter))

export const encodeUserCursor = (username: string): string => Buffer.from(username, 'utf8').toString('base64url')

export function decodeUserCursor (cursor: string | undefined): string | undefined {
  if (cursor === undefined) return undefined
  const username = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : ''
  if (username === '' || encodeUserCursor(username) !== cursor) throw invalid('cursor')
  return username
}

export const encodeEventCursor = (event: StoredAuditEvent): string =>
  Buffer.from(JSON.stringify([event.occurredAt.getTime(), event.id]), 'utf8').toString('base64url')

export function decodeEventCursor (cursor: string | undefined): { occurredAt: Date, id: string } | undefined {
  if (cursor === undefined) return undefined
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
    if (Array.isArray(value) && value.length === 2 && Number.isSafeInteger(value[0]) && typeof value[1] === 'string' && /^\d{1,19}$/.test(value[1])) {
      return { occurredAt: new Date(value[0] as number), id: value[1] }
    }
  } catch {}
  throw invalid('cursor')
}

/** `since`: an ISO 8601 date or date-time, as the command line's `events --since` takes it. */
export function parseSince (since: string | undefined): Date | undefined {
  if (since === undefined) return undefined
  const at = new Date(since)
  if (!/^\d{4}-\d{2}-\d{2}/.test(since) || Number.isNaN(at.getTime())) throw invalid('since')
  return at
}

/** The contract's success fields, typed as the answer schemas name them. */
export const OK = Object.freeze({ status: 0 as const, message: 'Success' as const })
