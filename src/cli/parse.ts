import { parseArgs } from 'node:util'
import { isKeyIdShaped } from '../core/api-key-secret.js'

export const USAGE = `usage: auth-token-service <command>

commands:
  serve                               start the service (what npm start runs)
  migrate                             apply the SQL migrations in sql/ (idempotent)
  user add <username> [--federated]   create an account; password: first line of stdin
                                      (optional with --federated: the directory checks it)
  user add <username> --service       create a service account: no password, never a Login;
                                      it authenticates with API keys
  user passwd <username>              set a new password from stdin; ends the account's tokens
  user disable <username>             disable the account; ends its tokens
  user enable <username>              enable the account again
  user list                           one account per line
  user unlock <username>              lift the lock that failed logins put on the account
  user delete <username>              delete the account; ends its tokens (its audit events stay)
  user totp-reset <username>          remove the account's second factor (a lost authenticator)
  user email <username> <address>    set the address recovery mail goes to
  user invite <username> <address>    create a person's account without a password and mail
                                      it a link (7 days) to set the first one
  sessions list <username>            the account's active sessions, one per line:
                                      id, created, last refresh, IP, user agent, expiry
  sessions revoke <username>          end all active tokens of the account
  keys create <username> --name NAME [--days N]
                                      a new API key (default 90 days); its secret, shown
                                      once, is alone on the last line of stdout
  keys list <username>                the account's live keys, one per line:
                                      id, name, created, expiry, last used
  keys revoke <id>                    end the key at once, everywhere
  groups add <username> <group>       put the account in the group (a new name makes it);
                                      its live tokens carry the change at once
  groups remove <username> <group>    take the account out of the group, at once
  groups list [<username>]            every group and its number of members; or the
                                      account's groups: name, local or directory
  events [--user NAME] [--since ISO]  print the audit events, oldest first
  oidc clients add NAME --redirect-uri URL [--redirect-uri URL] [--public]
                                      register an OpenID Connect client (confidential unless
                                      --public); also --post-logout-redirect-uri URL (again
                                      for more) and --backchannel-logout-uri URL; prints the
                                      client id, then a confidential client's secret, shown
                                      once, alone on the last line of stdout
  oidc clients list                   the registered clients, one per line: client id, name,
                                      public or confidential, created, redirect URIs
  oidc clients remove CLIENT_ID       remove the client; every token it holds ends
  oidc rotate-keys                    new signing keys for the OpenID Connect provider, one
                                      kid per line; the old ones stay in its JWKS until the
                                      ID tokens they signed have expired

options:
  --verbose, -v                       say (on stderr) which database or running service was used
  --version                           print the version
  --help, -h                          print this

Account and session commands go through the admin API of a running service when
AUTH_ADMIN_URL (with AUTH_ADMIN_KEY or AUTH_ADMIN_KEY_FILE) is set, or when the service
holding the embedded data directory runs; otherwise they open the database themselves.

Configuration comes from the environment (DATABASE_URL, REDIS_URL, ...; see docs/configuration.md).
Exit status: 0 success, 1 failure, 2 usage error.`

/** The exit status of every command (USAGE's last line says the same to the operator). */
export const EXIT = Object.freeze({ success: 0, failure: 1, usage: 2 })

/** A command line that names no command this program has (exit 2, with a pointer to the usage). */
export class UsageError extends Error {}

/**
 * What a usage error prints after the program's name: the problem, then where the usage is. The
 * whole usage (40 lines) printed on every slip buried the one line that mattered.
 */
export function usageErrorText (error: UsageError): string {
  return `${error.message}\nRun 'auth-token-service --help' for usage.`
}

/** Every command, as the usage names it; an unknown option's message names the one it was given to. */
export const COMMANDS = [
  'serve', 'migrate', 'user add', 'user passwd', 'user disable', 'user enable', 'user list', 'user unlock',
  'user delete', 'user totp-reset', 'user email', 'user invite', 'sessions list', 'sessions revoke', 'keys create', 'keys list', 'keys revoke',
  'groups add', 'groups remove', 'groups list', 'events',
  'oidc clients add', 'oidc clients list', 'oidc clients remove', 'oidc rotate-keys'
] as const

/** The account and session commands: the ones written once against AdminOperations (commands.ts). */
export type AccountInvocation =
  | { command: 'user list' }
  | { command: 'user add', username: string, federated: boolean, service: boolean }
  | { command: 'events', username: string | undefined, since: Date | undefined }
  | { command: 'user passwd', username: string }
  | { command: 'user email' | 'user invite', username: string, email: string }
  | { command: 'keys create', username: string, name: string, days: number | undefined }
  | { command: 'keys list', username: string }
  | { command: 'keys revoke', id: string }
  | { command: 'groups add' | 'groups remove', username: string, group: string }
  | { command: 'groups list', username: string | undefined }
  | { command: 'oidc clients add', name: string, redirectUris: string[], postLogoutRedirectUris: string[], public: boolean, backchannelLogoutUri: string | undefined }
  | { command: 'oidc clients list' }
  | { command: 'oidc clients remove', clientId: string }
  | { command: 'oidc rotate-keys' }
  | { command: 'user disable' | 'user enable' | 'user unlock' | 'user delete' | 'user totp-reset' | 'sessions revoke' | 'sessions list', username: string }

export type Invocation = (
  | { command: 'help' }
  | { command: 'version' }
  | { command: 'serve' }
  | { command: 'migrate' }
  | AccountInvocation
) & {
  /** --verbose: say on stderr which database (or which running service) the command used. */
  verbose?: true
}

function oneName (positionals: string[], command: string): string {
  if (positionals.length !== 1 || positionals[0] === undefined) throw new UsageError(`${command} takes exactly one <username>`)
  return positionals[0]
}

/**
 * The whole command line is checked before anything else happens, so a usage error
 * (exit 2) never depends on the configuration, never opens a database and never
 * creates the embedded one under ./data.
 */
export function parseCommandLine (argv: string[]): Invocation {
  const args = keyIdAsPositional(argv)
  let parsed
  try {
    parsed = parseArgs({ args, allowPositionals: true, strict: true, options: OPTIONS })
  } catch (error) {
    throw inOwnWords(error, args)
  }
  const { values, positionals } = parsed
  if (values.help === true) return { command: 'help' }
  if (values.version === true) return { command: 'version' }
  const invocation = parseCommand(values, positionals)
  return values.verbose === true ? { ...invocation, verbose: true } : invocation
}

const OPTIONS = {
  federated: { type: 'boolean' },
  service: { type: 'boolean' },
  name: { type: 'string' },
  days: { type: 'string' },
  user: { type: 'string' },
  since: { type: 'string' },
  'redirect-uri': { type: 'string', multiple: true },
  'post-logout-redirect-uri': { type: 'string', multiple: true },
  'backchannel-logout-uri': { type: 'string' },
  public: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  // No -v: that has been --verbose's.
  version: { type: 'boolean' },
  verbose: { type: 'boolean', short: 'v' }
} as const

/**
 * parseArgs' refusal as one short line: its own message for an unknown option goes on with
 * advice about `--` ("To specify a positional argument starting with a '-' ...") that fits
 * no command here.
 */
function inOwnWords (error: unknown, args: string[]): unknown {
  if (!(error instanceof Error) || !('code' in error) || typeof error.code !== 'string' || !error.code.startsWith('ERR_PARSE_ARGS')) return error
  const option = /'(-[^' ,]*)/.exec(error.message)?.[1] ?? ''
  const longName = /--[\w-]+/.exec(error.message)?.[0] ?? option
  switch (error.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION': {
      const command = commandOf(args)
      return new UsageError(`unknown option '${option}'${command === undefined ? '' : ` for '${command}'`}`)
    }
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return new UsageError(/does not take/.test(error.message) ? `${longName} takes no value` : `${longName} wants a value`)
    default:
      return new UsageError(error.message.split('. ')[0] ?? error.message)
  }
}

/** The command that `args` names, known options and all (none when it names none). */
function commandOf (args: string[]): string | undefined {
  const { positionals } = parseArgs({ args, allowPositionals: true, strict: false, options: OPTIONS })
  const [first, second, third] = positionals
  return COMMANDS.find((command) => command === `${first} ${second} ${third}` || command === `${first} ${second}` || command === first)
}

/**
 * `keys revoke <id>` with an id that starts with a dash (ids made before they stopped doing so:
 * one in 64) reads as that id, not as options: the id's place is marked as positional (`--`).
 */
function keyIdAsPositional (argv: string[]): string[] {
  const at = argv.findIndex((arg, index) => arg === 'revoke' && argv[index - 1] === 'keys')
  const id = argv[at + 1]
  if (at === -1 || id === undefined || !id.startsWith('-') || !isKeyIdShaped(id)) return argv
  return [...argv.slice(0, at + 1), '--', ...argv.slice(at + 1)]
}

interface Options {
  federated?: boolean
  service?: boolean
  user?: string
  since?: string
  name?: string
  days?: string
  'redirect-uri'?: string[]
  'post-logout-redirect-uri'?: string[]
  'backchannel-logout-uri'?: string
  public?: boolean
}

function parseCommand (values: Options, positionals: string[]): Invocation {
  const [command, sub, ...rest] = positionals
  if (command === undefined) throw new UsageError('a command is required: serve, migrate, user, sessions, keys, groups, events or oidc')
  if (values.federated === true && !(command === 'user' && sub === 'add')) throw new UsageError('--federated belongs to `user add`')
  if (values.service === true && !(command === 'user' && sub === 'add')) throw new UsageError('--service belongs to `user add`')
  if (values.service === true && values.federated === true) throw new UsageError('--service and --federated exclude each other: a service account has no password to check')
  if ((values.user !== undefined || values.since !== undefined) && command !== 'events') throw new UsageError('--user and --since belong to `events`')
  if ((values.name !== undefined || values.days !== undefined) && !(command === 'keys' && sub === 'create')) throw new UsageError('--name and --days belong to `keys create`')
  const clientOptions = [values['redirect-uri'], values['post-logout-redirect-uri'], values['backchannel-logout-uri'], values.public]
  if (clientOptions.some((value) => value !== undefined) && !(command === 'oidc' && sub === 'clients' && rest[0] === 'add')) {
    throw new UsageError('--redirect-uri, --post-logout-redirect-uri, --backchannel-logout-uri and --public belong to `oidc clients add`')
  }
  switch (command) {
    case 'events': {
      if (sub !== undefined) throw new UsageError('events takes no positional arguments')
      let since: Date | undefined
      if (values.since !== undefined) {
        since = new Date(values.since)
        if (Number.isNaN(since.getTime())) throw new UsageError(`--since wants an ISO 8601 date or date-time, got "${values.since}"`)
      }
      return { command: 'events', username: values.user, since }
    }
    case 'serve':
    case 'migrate':
      if (sub !== undefined) throw new UsageError(`${command} takes no arguments`)
      return { command }
    case 'user':
      switch (sub) {
        case 'add':
          return { command: 'user add', username: oneName(rest, 'user add'), federated: values.federated === true, service: values.service === true }
        case 'passwd':
        case 'disable':
        case 'enable':
        case 'unlock':
        case 'delete':
        case 'totp-reset':
          return sub === 'passwd' ? { command: 'user passwd', username: oneName(rest, 'user passwd') } : { command: `user ${sub}`, username: oneName(rest, `user ${sub}`) }
        case 'list':
          if (rest.length !== 0) throw new UsageError('user list takes no arguments')
          return { command: 'user list' }
        case 'email':
        case 'invite': {
          const [username, email, ...extra] = rest
          if (username === undefined || email === undefined || extra.length !== 0) throw new UsageError(`user ${sub} takes exactly <username> <address>`)
          return { command: `user ${sub}`, username, email }
        }
        default:
          throw new UsageError(`unknown user command: ${sub ?? '(none)'}`)
      }
    case 'keys':
      switch (sub) {
        case 'create': {
          if (values.name === undefined || values.name === '') throw new UsageError('keys create wants --name NAME')
          if (values.days !== undefined && !/^\d{1,5}$/.test(values.days)) throw new UsageError(`--days wants a whole number of days, got "${values.days}"`)
          return { command: 'keys create', username: oneName(rest, 'keys create'), name: values.name, days: values.days === undefined ? undefined : Number(values.days) }
        }
        case 'list':
          return { command: 'keys list', username: oneName(rest, 'keys list') }
        case 'revoke':
          if (rest.length !== 1 || rest[0] === undefined) throw new UsageError('keys revoke takes exactly one <id>')
          return { command: 'keys revoke', id: rest[0] }
        default:
          throw new UsageError(`unknown keys command: ${sub ?? '(none)'}`)
      }
    case 'groups':
      switch (sub) {
        case 'add':
        case 'remove': {
          const [username, group, ...extra] = rest
          if (username === undefined || group === undefined || extra.length !== 0) throw new UsageError(`groups ${sub} takes exactly <username> <group>`)
          return { command: `groups ${sub}`, username, group }
        }
        case 'list':
          if (rest.length > 1) throw new UsageError('groups list takes at most one <username>')
          return { command: 'groups list', username: rest[0] }
        default:
          throw new UsageError(`unknown groups command: ${sub ?? '(none)'}`)
      }
    case 'oidc':
      if (sub === 'rotate-keys') {
        if (rest.length !== 0) throw new UsageError('oidc rotate-keys takes no arguments')
        return { command: 'oidc rotate-keys' }
      }
      if (sub !== 'clients') throw new UsageError(`unknown oidc command: ${sub ?? '(none)'}`)
      return parseClientCommand(values, rest)
    case 'sessions':
      if (sub !== 'revoke' && sub !== 'list') throw new UsageError(`unknown sessions command: ${sub ?? '(none)'}`)
      return { command: `sessions ${sub}`, username: oneName(rest, `sessions ${sub}`) }
    default:
      throw new UsageError(`unknown command: ${command}`)
  }
}

/** `oidc clients add|list|remove`: what follows `oidc clients`. */
function parseClientCommand (values: Options, [action, ...rest]: string[]): Invocation {
  switch (action) {
    case 'add': {
      if (rest.length !== 1 || rest[0] === undefined) throw new UsageError('oidc clients add takes exactly one NAME')
      const redirectUris = values['redirect-uri'] ?? []
      if (redirectUris.length === 0) throw new UsageError('oidc clients add wants --redirect-uri URL (one or more)')
      return {
        command: 'oidc clients add',
        name: rest[0],
        redirectUris,
        postLogoutRedirectUris: values['post-logout-redirect-uri'] ?? [],
        public: values.public === true,
        backchannelLogoutUri: values['backchannel-logout-uri']
      }
    }
    case 'list':
      if (rest.length !== 0) throw new UsageError('oidc clients list takes no arguments')
      return { command: 'oidc clients list' }
    case 'remove':
      if (rest.length !== 1 || rest[0] === undefined) throw new UsageError('oidc clients remove takes exactly one CLIENT_ID')
      return { command: 'oidc clients remove', clientId: rest[0] }
    default:
      throw new UsageError(`unknown oidc clients command: ${action ?? '(none)'}`)
  }
}
