import type { AdminEvent, AdminGroup, AdminKey, AdminOidcClient, AdminSession } from '../admin/client.js'
import { escapeControlCharacters } from '@auth-token-service/protocol/log-escape'
import type { AccountGroups, AccountSummary } from './operations.js'

/*
 * What the listing commands print, one line per item, the same whichever adapter answered,
 * so scripts read either alike.
 */

/** Tab-separated cells, each escaped: a name with a newline or a tab in it forges no line or cell. */
export function line (cells: readonly string[]): string {
  return `${cells.map((cell) => escapeControlCharacters(cell).replaceAll('\t', ' ')).join('\t')}\n`
}

export function accountLine (account: AccountSummary): string {
  return line([account.username, account.kind === 'service' ? 'service' : account.federated ? 'federated' : 'local', account.disabled ? 'disabled' : 'enabled'])
}

/** One session: id, created, last refresh (- when none), client IP, user agent (- when none), expiry. */
export function sessionLine (session: AdminSession): string {
  return line([session.id, session.created, session.refreshed ?? '-', session.ip, session.user_agent === '' ? '-' : session.user_agent, session.expiration_date])
}

/** One audit event: time, event, username, outcome, client IP, user agent (- for each one missing). */
export function eventLine (event: AdminEvent): string {
  return line([event.time, event.event, event.username ?? '-', event.outcome, event.client_ip ?? '-', event.user_agent ?? '-'])
}

/** One API key: id, name, created, expiry, last used (- when never). Never its secret. */
export function keyLine (key: AdminKey): string {
  return line([key.id, key.name, key.created, key.expiration_date, key.last_used ?? '-'])
}

/** One group: its name, how many accounts are in it. */
export function groupLine (group: AdminGroup): string {
  return line([group.name, String(group.members)])
}

/**
 * The account's groups, one per line: the name, `directory` for one its directory named at its
 * last Login (it goes when the directory drops it), `local` for the others.
 */
export function accountGroupLines (account: AccountGroups): string[] {
  return account.groups.map((name) => line([name, account.directoryGroups.includes(name) ? 'directory' : 'local']))
}

/** One OpenID Connect client: client id, name, public or confidential, created, its redirect URIs (space-separated). Never a secret. */
export function clientLine (client: AdminOidcClient): string {
  return line([client.client_id, client.name, client.public ? 'public' : 'confidential', client.created, client.redirect_uris.join(' ')])
}
