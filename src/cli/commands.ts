import { EXIT } from './exit-codes.js'
import type { AdminOperations } from './operations.js'
import { accountLine, eventLine, sessionLine } from './output.js'
import type { AccountInvocation } from './parse.js'
import { UsageError } from './parse.js'
import { readPassword } from './read-password.js'

/**
 * The account and session commands, each written once against AdminOperations: what it reads,
 * what it asks of the service, what it prints. Which adapter answers is main.ts's choice.
 * Listings go to stdout (one line per item, output.ts); what a change did goes to stderr.
 */

type Invocations = { [I in AccountInvocation as I['command']]: I }
type CommandTable = { [C in keyof Invocations]: (operations: AdminOperations, invocation: Invocations[C]) => Promise<void> }

const out = (text: string): void => { process.stdout.write(text) }
const say = (text: string): void => { process.stderr.write(`${text}\n`) }

async function passwordFromStdin (): Promise<string> {
  const password = await readPassword()
  if (password === undefined || password === '') throw new UsageError('a password is required on the first line of standard input')
  return password
}

/** A federated account may have no local password (the directory checks it): stdin is read only when piped. */
async function optionalPasswordFromStdin (): Promise<string | undefined> {
  if (process.stdin.isTTY === true) return undefined
  const password = await readPassword()
  return password === undefined || password === '' ? undefined : password
}

const COMMANDS: CommandTable = {
  async 'user add' (operations, { username, federated }) {
    // Read before the service is asked: an empty stdin is a usage error that touches nothing.
    // But not typed in vain: a target that cannot take the command refuses first.
    await operations.beforePassword()
    const password = federated ? await optionalPasswordFromStdin() : await passwordFromStdin()
    const account = await operations.addUser(username, password, federated)
    say(`created ${account.federated ? 'federated ' : ''}account ${account.username}`)
  },
  async 'user passwd' (operations, { username }) {
    await operations.beforePassword()
    const password = await passwordFromStdin()
    const { username: name, ended } = await operations.setPassword(username, password)
    say(`password changed for ${name}; ${ended} active token(s) ended`)
  },
  async 'user disable' (operations, { username }) {
    const { username: name, ended } = await operations.setDisabled(username, true)
    say(`${name} disabled; ${ended} active token(s) ended`)
  },
  async 'user enable' (operations, { username }) {
    const { username: name } = await operations.setDisabled(username, false)
    say(`${name} enabled`)
  },
  async 'user unlock' (operations, { username }) {
    const { username: name } = await operations.unlockUser(username)
    say(`${name} unlocked`)
  },
  async 'user delete' (operations, { username }) {
    const { username: name, ended } = await operations.deleteUser(username)
    say(`${name} deleted; ${ended} active token(s) ended`)
  },
  async 'user list' (operations) {
    for await (const account of operations.users()) out(accountLine(account))
  },
  async 'sessions list' (operations, { username }) {
    for (const session of await operations.sessions(username)) out(sessionLine(session))
  },
  async 'sessions revoke' (operations, { username }) {
    const { username: name, ended } = await operations.revokeSessions(username)
    say(`${ended} active token(s) of ${name} ended`)
  },
  async events (operations, { username, since }) {
    for await (const event of operations.events({ user: username, since })) out(eventLine(event))
  }
}

async function dispatch<C extends keyof Invocations> (operations: AdminOperations, command: C, invocation: Invocations[C]): Promise<void> {
  await COMMANDS[command](operations, invocation)
}

/** Runs one account or session command; a refusal is thrown (exit-codes.ts says how it ends). */
export async function runAccountCommand (operations: AdminOperations, invocation: AccountInvocation): Promise<number> {
  await dispatch(operations, invocation.command, invocation)
  return EXIT.success
}
