import { isGroupName } from '../core/group-names.js'
import { reasons } from '../errors/reasons.js'
import { badRequest } from '../errors/status.js'
import { EXIT, Failure } from './exit-codes.js'
import type { AccountGroups, AdminOperations } from './operations.js'
import { accountGroupLines, accountLine, clientLine, eventLine, groupLine, keyLine, sessionLine } from './output.js'
import { UsageError, type AccountInvocation } from './parse.js'
import { readPassword } from './read-password.js'

/**
 * The account and session commands, each written once against AdminOperations: what it reads,
 * what it asks of the service, what it prints. Which adapter answers is main.ts's choice.
 * Listings go to stdout (one line per item, output.ts); what a change did goes to stderr.
 */

type Invocations = { [I in AccountInvocation as I['command']]: I }
type CommandTable = { [C in keyof Invocations]: (operations: AdminOperations, invocation: Invocations[C], terminal: Terminal) => Promise<void> }

/** Where a command reads its password and writes what it did: the process's own streams, or a test's. */
export interface Terminal {
  /** To stdout: the listings. */
  out (text: string): void
  /** To stderr, one line: what a change did. */
  say (text: string): void
  /** The first line of stdin (typed without echo at a terminal); undefined when there is none. */
  readPassword (): Promise<string | undefined>
  /** Whether stdin is a terminal rather than a pipe. */
  isTTY (): boolean
}

export const processTerminal: Terminal = {
  out: (text) => { process.stdout.write(text) },
  say: (text) => { process.stderr.write(`${text}\n`) },
  readPassword: async () => await readPassword(),
  isTTY: () => process.stdin.isTTY === true
}

async function passwordFromStdin (terminal: Terminal): Promise<string> {
  const password = await terminal.readPassword()
  if (password === undefined || password === '') throw new UsageError('a password is required on the first line of standard input')
  return password
}

/** A federated account may have no local password (the directory checks it): stdin is read only when piped. */
async function optionalPasswordFromStdin (terminal: Terminal): Promise<string | undefined> {
  if (terminal.isTTY()) return undefined
  const password = await terminal.readPassword()
  return password === undefined || password === '' ? undefined : password
}

/**
 * The account's local groups, the set the admin API writes: every group but those its directory
 * named (the user view tells no more, so a group that is both counts as the directory's).
 */
function localGroups (account: AccountGroups): string[] {
  return account.groups.filter((name) => !account.directoryGroups.includes(name))
}

/** What the account's groups are now, its directory's marked, for the line a change says. */
function groupsNow ({ username, groups, directoryGroups }: AccountGroups): string {
  if (groups.length === 0) return `${username} is in no group`
  return `${username}'s groups: ${groups.map((name) => directoryGroups.includes(name) ? `${name} (directory)` : name).join(', ')}`
}

const COMMANDS: CommandTable = {
  async 'user add' (operations, { username, federated, service }, terminal) {
    if (service) {
      // No password to read: a service account authenticates with API keys only.
      const account = await operations.addUser(username, undefined, false, 'service')
      terminal.say(`created service account ${account.username}`)
      return
    }
    // Read before the service is asked: an empty stdin is a usage error that touches nothing.
    // But not typed in vain: a target that cannot take the command refuses first.
    await operations.beforePassword()
    const password = federated ? await optionalPasswordFromStdin(terminal) : await passwordFromStdin(terminal)
    const account = await operations.addUser(username, password, federated)
    terminal.say(`created ${account.federated ? 'federated ' : ''}account ${account.username}`)
  },
  async 'user passwd' (operations, { username }, terminal) {
    await operations.beforePassword()
    const password = await passwordFromStdin(terminal)
    const { username: name, ended } = await operations.setPassword(username, password)
    terminal.say(`password changed for ${name}; ${ended} active token(s) ended`)
  },
  async 'user disable' (operations, { username }, { say }) {
    const { username: name, ended } = await operations.setDisabled(username, true)
    say(`${name} disabled; ${ended} active token(s) ended`)
  },
  async 'user enable' (operations, { username }, { say }) {
    const { username: name } = await operations.setDisabled(username, false)
    say(`${name} enabled`)
  },
  async 'user unlock' (operations, { username }, { say }) {
    const { username: name } = await operations.unlockUser(username)
    say(`${name} unlocked`)
  },
  async 'user totp-reset' (operations, { username }, { say }) {
    const { username: name } = await operations.resetTotp(username)
    say(`${name}'s second factor removed: the password alone logs in until it enrolls again`)
  },
  async 'user email' (operations, { username, email }, { say }) {
    const { username: name } = await operations.setEmail(username, email)
    say(`${name}'s email address set`)
  },
  async 'user invite' (operations, { username, email }, { say }) {
    const { username: name } = await operations.inviteUser(username, email)
    say(`invited ${name}: a link to set the password is on its way (valid 7 days)`)
  },
  async 'user delete' (operations, { username }, { say }) {
    const { username: name, ended } = await operations.deleteUser(username)
    say(`${name} deleted; ${ended} active token(s) ended`)
  },
  async 'user list' (operations, _invocation, { out }) {
    for await (const account of operations.users()) out(accountLine(account))
  },
  async 'sessions list' (operations, { username }, { out }) {
    for (const session of await operations.sessions(username)) out(sessionLine(session))
  },
  async 'sessions revoke' (operations, { username }, { say }) {
    const { username: name, ended } = await operations.revokeSessions(username)
    say(`${ended} active token(s) of ${name} ended`)
  },
  async 'keys create' (operations, { username, name, days }, { out, say }) {
    const { key, secret } = await operations.createKey(username, name, days)
    say(`created key ${key.id} (${key.name}) for ${username}, expires ${key.expiration_date}; its secret is shown this once:`)
    // Alone on stdout's last line: `| tail -n 1` hands it to a secret store and nothing else.
    out(`${secret}\n`)
  },
  async 'keys list' (operations, { username }, { out }) {
    for await (const key of operations.keys(username)) out(keyLine(key))
  },
  async 'keys revoke' (operations, { id }, { say }) {
    const key = await operations.revokeKey(id)
    say(`key ${key.id} (${key.name}) revoked`)
  },
  // Both changes write the set even when it stays the same: a change that reached Postgres and not
  // the live token records (a 503 part way) reaches them when the command is run again.
  async 'groups add' (operations, { username, group }, { say }) {
    // A group the directory names is left to it: made local as well it would look the same here,
    // and the next add or remove, which can tell local groups only as the others, would drop it.
    const { before, after } = await operations.changeLocalGroups(username, (now) =>
      now.groups.includes(group) ? localGroups(now) : [...localGroups(now), group])
    const done = !before.groups.includes(group)
      ? `added to ${group}`
      : before.directoryGroups.includes(group) ? `was in ${group} through the directory already` : `was in ${group} already`
    say(`${after.username} ${done}; ${groupsNow(after)}`)
  },
  async 'groups remove' (operations, { username, group }, { say }) {
    const { before, after } = await operations.changeLocalGroups(username, (now) => {
      // A name outside the rule is in no account's groups: told as the service tells it, nothing written.
      if (!now.groups.includes(group) && !isGroupName(group)) throw badRequest(reasons.groupNameNotValid())
      return localGroups(now).filter((name) => name !== group)
    })
    if (after.directoryGroups.includes(group)) {
      throw new Failure(`${after.username} is in ${group} through the directory, which alone can take it out (at the account's next Login); ${groupsNow(after)}`)
    }
    say(`${after.username} ${before.groups.includes(group) ? 'removed from' : 'was not in'} ${group}; ${groupsNow(after)}`)
  },
  async 'groups list' (operations, { username }, { out }) {
    if (username === undefined) {
      for (const group of await operations.groups()) out(groupLine(group))
      return
    }
    for (const text of accountGroupLines(await operations.accountGroups(username))) out(text)
  },
  async events (operations, { username, since }, { out }) {
    for await (const event of operations.events({ user: username, since })) out(eventLine(event))
  },
  async 'oidc clients add' (operations, invocation, { out, say }) {
    const { client, secret } = await operations.addOidcClient({
      name: invocation.name,
      redirect_uris: invocation.redirectUris,
      post_logout_redirect_uris: invocation.postLogoutRedirectUris,
      public: invocation.public,
      ...(invocation.backchannelLogoutUri === undefined ? {} : { backchannel_logout_uri: invocation.backchannelLogoutUri })
    })
    // The client id first, then a confidential client's secret alone on the last line: `| head -n 1`
    // and `| tail -n 1` hand each to the app's settings and nothing else.
    out(`${client.client_id}\n`)
    if (secret === undefined) {
      say(`registered public client ${client.client_id} (${client.name}): no secret, PKCE required`)
      return
    }
    say(`registered confidential client ${client.client_id} (${client.name}); its secret is shown this once:`)
    out(`${secret}\n`)
  },
  async 'oidc clients list' (operations, _invocation, { out }) {
    for (const client of await operations.oidcClients()) out(clientLine(client))
  },
  async 'oidc clients remove' (operations, { clientId }, { say }) {
    const client = await operations.removeOidcClient(clientId)
    say(`client ${client.client_id} (${client.name}) removed; every token it held has ended`)
  },
  async 'oidc rotate-keys' (operations, _invocation, { out, say }) {
    const { keys, retired } = await operations.rotateSigningKeys()
    for (const key of retired) {
      say(key.readable
        ? `retired ${key.kid} (${key.alg}): in the JWKS until ${key.kept_until}`
        : `warning: retired ${key.kid} (${key.alg}) does not open with the sealing key the new keys were sealed with: ` +
          'run the command with the service\'s AUTH_TOTP_KEY (or through its admin API), or the service cannot open the new keys either')
    }
    // The new kids alone on stdout, one a line: what a script compares with an ID token's `kid`.
    for (const key of keys) out(`${key.kid}\t${key.alg}\n`)
  }
}

async function dispatch<C extends keyof Invocations> (operations: AdminOperations, command: C, invocation: Invocations[C], terminal: Terminal): Promise<void> {
  await COMMANDS[command](operations, invocation, terminal)
}

/** Runs one account or session command; a refusal is thrown (exit-codes.ts says how it ends). */
export async function runAccountCommand (operations: AdminOperations, invocation: AccountInvocation, terminal: Terminal = processTerminal): Promise<number> {
  await dispatch(operations, invocation.command, invocation, terminal)
  return EXIT.success
}
