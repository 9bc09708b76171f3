import type { AdminClient } from '../admin/client.js'
import { escapeControlCharacters } from '../logging/log-escape.js'

/**
 * The account and session commands over the admin API of a running service: the same output
 * as when the command line opens the database itself (main.ts), so scripts read either alike.
 */

export type AccountCommand =
  | { command: 'user list' }
  | { command: 'user add', username: string, federated: boolean, password: string | undefined }
  | { command: 'user passwd', username: string, password: string }
  | { command: 'events', username: string | undefined, since: Date | undefined }
  | { command: 'user disable' | 'user enable' | 'user unlock' | 'user delete' | 'sessions revoke' | 'sessions list', username: string }

/** Tab-separated cells, each escaped: a name with a newline or a tab in it forges no line or cell. */
export function line (cells: readonly string[]): string {
  return `${cells.map((cell) => escapeControlCharacters(cell).replaceAll('\t', ' ')).join('\t')}\n`
}

export function accountLine (account: { username: string, federated: boolean, disabled: boolean }): string {
  return line([account.username, account.federated ? 'federated' : 'local', account.disabled ? 'disabled' : 'enabled'])
}

/** One session: id, created, last refresh (- when none), client IP, user agent (- when none), expiry. */
export function sessionLine (session: { id: string, created: string, refreshed: string | null, ip: string, userAgent: string, expires: string }): string {
  return line([session.id, session.created, session.refreshed ?? '-', session.ip, session.userAgent === '' ? '-' : session.userAgent, session.expires])
}

export function eventLine (event: { time: string, event: string, username: string | null, outcome: string, clientIp: string | null, userAgent: string | null }): string {
  return line([event.time, event.event, event.username ?? '-', event.outcome, event.clientIp ?? '-', event.userAgent ?? '-'])
}

const out = (text: string): void => { process.stdout.write(text) }
const say = (text: string): void => { process.stderr.write(`${text}\n`) }

export async function runThroughApi (client: AdminClient, invocation: AccountCommand): Promise<number> {
  switch (invocation.command) {
    case 'user add': {
      const account = await client.addUser(invocation.username, invocation.password, invocation.federated)
      say(`created ${account.federated ? 'federated ' : ''}account ${account.username}`)
      break
    }
    case 'user passwd': {
      const { user, ended } = await client.changeUser(invocation.username, { password: invocation.password })
      say(`password changed for ${user.username}; ${ended} active token(s) ended`)
      break
    }
    case 'user disable': {
      const { user, ended } = await client.changeUser(invocation.username, { disabled: true })
      say(`${user.username} disabled; ${ended} active token(s) ended`)
      break
    }
    case 'user enable': {
      const { user } = await client.changeUser(invocation.username, { disabled: false })
      say(`${user.username} enabled`)
      break
    }
    case 'user unlock': {
      const user = await client.unlockUser(invocation.username)
      say(`${user.username} unlocked`)
      break
    }
    case 'user delete': {
      const ended = await client.deleteUser(invocation.username)
      say(`${invocation.username} deleted; ${ended} active token(s) ended`)
      break
    }
    case 'user list':
      for await (const account of client.users()) out(accountLine(account))
      break
    case 'sessions list':
      for (const session of await client.sessions(invocation.username)) {
        out(sessionLine({ id: session.id, created: session.created, refreshed: session.refreshed, ip: session.ip, userAgent: session.user_agent, expires: session.expiration_date }))
      }
      break
    case 'sessions revoke': {
      const ended = await client.revokeSessions(invocation.username)
      say(`${ended} active token(s) of ${invocation.username} ended`)
      break
    }
    case 'events':
      for await (const event of client.events({ user: invocation.username, since: invocation.since })) {
        out(eventLine({ time: event.time, event: event.event, username: event.username, outcome: event.outcome, clientIp: event.client_ip, userAgent: event.user_agent }))
      }
      break
  }
  return 0
}
