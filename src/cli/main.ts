#!/usr/bin/env node
import { parseArgs } from 'node:util'
import { ConfigError, loadConfig, type Config } from '../config.js'
import { assertDataDirFree, DataDirBusyError, DataDirLockError } from '../db/data-dir-lock.js'
import type { Database } from '../db/queryable.js'
import { StatusError } from '../lib/status.js'
import type { AccountAdmin } from '../accounts.js'
import type { TokenStore } from '../stores/token-store.js'
import type { AuditLog } from '../stores/audit-log.js'
import { escapeControlCharacters } from '../lib/text.js'
import { readPassword } from './read-password.js'

// The drivers (pg, PGlite, ioredis, ldapts) and argon2 are loaded by the command that uses
// them, not at start: loaded up front they cost every run 0.2 s of CPU, --help and a usage
// error included (the tests run the CLI dozens of times; an operator's script may too).
const openDatabase = async (...args: Parameters<typeof import('../db/open.js').openDatabase>): Promise<Database> =>
  await (await import('../db/open.js')).openDatabase(...args)
const migrate = async (database: Database): Promise<{ applied: string[] }> => await (await import('../db/migrate.js')).migrate(database)
const backends = async (): Promise<typeof import('../backends.js')> => await import('../backends.js')

const USAGE = `usage: auth-token-service <command>

commands:
  serve                               start the service (what npm start runs)
  migrate                             apply the SQL migrations in sql/ (idempotent)
  user add <username> [--federated]   create an account; password: first line of stdin
                                      (optional with --federated: the directory checks it)
  user passwd <username>              set a new password from stdin; ends the account's tokens
  user disable <username>             disable the account; ends its tokens
  user enable <username>              enable the account again
  user list                           one account per line
  sessions revoke <username>          end all active tokens of the account
  events [--user NAME] [--since ISO]  print the audit events, oldest first

Configuration comes from the environment (DATABASE_URL, REDIS_URL, ...; see README).
Exit status: 0 success, 1 failure, 2 usage error.`

class UsageError extends Error {}
/** A failure whose message is already what the operator should read (exit 1). */
class Failure extends Error {}

type Invocation =
  | { command: 'help' | 'serve' | 'migrate' | 'user list' }
  | { command: 'user add', username: string, federated: boolean }
  | { command: 'events', username: string | undefined, since: Date | undefined }
  | { command: 'user passwd' | 'user disable' | 'user enable' | 'sessions revoke', username: string }

const quietLog = {
  info: () => {},
  warn: (o: unknown, message?: string) => { process.stderr.write(`warning: ${message ?? String(o)}\n`) },
  error: (o: unknown, message?: string) => { process.stderr.write(`error: ${message ?? String(o)}\n`) }
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
function parseCommandLine (argv: string[]): Invocation {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      federated: { type: 'boolean' },
      user: { type: 'string' },
      since: { type: 'string' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help === true) return { command: 'help' }
  const [command, sub, ...rest] = positionals
  if (command === undefined) throw new UsageError('a command is required')
  if (values.federated === true && !(command === 'user' && sub === 'add')) throw new UsageError('--federated belongs to `user add`')
  if ((values.user !== undefined || values.since !== undefined) && command !== 'events') throw new UsageError('--user and --since belong to `events`')
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
          return { command: 'user add', username: oneName(rest, 'user add'), federated: values.federated === true }
        case 'passwd':
        case 'disable':
        case 'enable':
          return { command: `user ${sub}`, username: oneName(rest, `user ${sub}`) }
        case 'list':
          if (rest.length !== 0) throw new UsageError('user list takes no arguments')
          return { command: 'user list' }
        default:
          throw new UsageError(`unknown user command: ${sub ?? '(none)'}`)
      }
    case 'sessions':
      if (sub !== 'revoke') throw new UsageError(`unknown sessions command: ${sub ?? '(none)'}`)
      return { command: 'sessions revoke', username: oneName(rest, 'sessions revoke') }
    default:
      throw new UsageError(`unknown command: ${command}`)
  }
}

/** Network-level failures (ECONNREFUSED, ENOTFOUND, ...) of a driver, as one readable line. */
function unreachable (what: string, error: unknown): unknown {
  const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : ''
  if (/^E[A-Z]+$/.test(code) || (error instanceof Error && /timeout/i.test(error.message))) {
    return new Failure(`${what} cannot be reached: ${error instanceof Error ? error.message : code}`)
  }
  return error
}

/**
 * The token store for commands that end tokens, connected before anything changes:
 * the Redis client does not queue commands while it connects, so acting first would
 * change the account and then fail to end its tokens (or fail a revoke outright).
 */
async function openConnectedTokenStore (config: Config, database: Database): Promise<TokenStore> {
  if (config.redis === undefined) {
    // On the embedded database this process holds the data directory, so no service runs on these
    // accounts and their in-process tokens ended with it; on Postgres one may run, out of reach.
    if (database.kind === 'postgres') {
      process.stderr.write('warning: REDIS_URL is not set: tokens live inside the serving process, which this command cannot reach; ' +
        'restart a running service to end them\n')
    }
    return (await backends()).openTokenStore(config, quietLog)
  }
  const store = (await backends()).openTokenStore(config, quietLog)
  if (!('ready' in store)) return store
  const waitMs = Math.max(2000, 4 * config.redisCommandTimeoutMs)
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      store.ready(),
      new Promise((_resolve, reject) => { timer = setTimeout(() => { reject(new Error('timeout')) }, waitMs) })
    ])
  } catch {
    await store.close()
    throw new Failure(`Redis cannot be reached (${config.redis.kind}) within ${waitMs} ms; nothing was changed`)
  } finally {
    clearTimeout(timer)
  }
  return store
}

/**
 * Runs `work` on the accounts. The database is opened first: on the embedded one that takes
 * its directory, or refuses at once (exit 1) while the service or another command has it.
 */
async function withAccounts<T> (config: Config, command: string, endsTokens: boolean, work: (admin: AccountAdmin, audit: AuditLog) => Promise<T>): Promise<T> {
  const database = await openDatabase(config, { command })
  let tokens: TokenStore | undefined
  try {
    const [{ assertMigrated, openAuditLog }, { createAccountAdmin }, { createPasswordHasher }, { createMemoryTokenStore }, { createSqlUserStore }] =
      await Promise.all([backends(), import('../accounts.js'), import('../lib/passwords.js'), import('../stores/memory-token-store.js'), import('../stores/user-store.js')])
    try {
      if (database.kind === 'pglite') await migrate(database)
      else await assertMigrated(database)
    } catch (error) {
      throw unreachable('the database (DATABASE_URL)', error)
    }
    // Commands that end no tokens get an empty in-process store: nothing to connect to, nothing to end.
    tokens = endsTokens ? await openConnectedTokenStore(config, database) : createMemoryTokenStore({ denyTtlMs: 1000 })
    const audit = openAuditLog(config, database, quietLog)
    try {
      return await work(createAccountAdmin({ users: createSqlUserStore(database), tokens, hasher: createPasswordHasher(config.argon2), audit, actor: 'cli' }), audit)
    } finally {
      await audit.close()
    }
  } finally {
    await Promise.allSettled([tokens?.close(), database.close()])
  }
}

/** On the embedded database: refuses at once while another process has its directory. */
async function refuseWhileDataDirBusy (config: Config, command: string): Promise<void> {
  if (config.databaseUrl === undefined) await assertDataDirFree(config.dataDir, command)
}

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

async function run (argv: string[]): Promise<number> {
  const invocation = parseCommandLine(argv)
  if (invocation.command === 'help') {
    process.stdout.write(`${USAGE}\n`)
    return 0
  }
  const config = loadConfig()

  switch (invocation.command) {
    case 'serve': {
      const { startServer } = await import('../server.js')
      await startServer(config)
      return -1
    }
    case 'migrate': {
      const database = await openDatabase(config, { command: 'migrate' })
      try {
        const { applied } = await migrate(database).catch((error: unknown) => { throw unreachable('the database (DATABASE_URL)', error) })
        process.stderr.write(applied.length === 0 ? 'migrations: up to date\n' : `migrations applied: ${applied.join(', ')}\n`)
      } finally {
        await database.close()
      }
      return 0
    }
    case 'user add': {
      // Read before anything is opened: an empty stdin is a usage error that touches nothing.
      // But not typed in vain: a directory the service has open refuses first.
      await refuseWhileDataDirBusy(config, invocation.command)
      const { username, federated } = invocation
      const password = federated ? await optionalPasswordFromStdin() : await passwordFromStdin()
      return await withAccounts(config, invocation.command, false, async (admin) => {
        const account = await admin.add(username, password, federated)
        process.stderr.write(`created ${account.federated ? 'federated ' : ''}account ${account.username}\n`)
        return 0
      })
    }
    case 'user passwd': {
      await refuseWhileDataDirBusy(config, invocation.command)
      const password = await passwordFromStdin()
      const { username } = invocation
      return await withAccounts(config, invocation.command, true, async (admin) => {
        const { account, ended } = await admin.setPassword(username, password)
        process.stderr.write(`password changed for ${account.username}; ${ended} active token(s) ended\n`)
        return 0
      })
    }
    case 'user disable':
    case 'user enable': {
      const { username } = invocation
      const disable = invocation.command === 'user disable'
      return await withAccounts(config, invocation.command, disable, async (admin) => {
        const { account, ended } = await admin.setDisabled(username, disable)
        process.stderr.write(disable ? `${account.username} disabled; ${ended} active token(s) ended\n` : `${account.username} enabled\n`)
        return 0
      })
    }
    case 'user list':
      return await withAccounts(config, invocation.command, false, async (admin) => {
        for (const account of await admin.list()) {
          const flags = [account.federated ? 'federated' : 'local', account.disabled ? 'disabled' : 'enabled']
          process.stdout.write(`${account.username}\t${flags.join('\t')}\n`)
        }
        return 0
      })
    case 'events': {
      const { username, since } = invocation
      return await withAccounts(config, invocation.command, false, async (_admin, audit) => {
        for (const event of await audit.list({ username: username?.normalize('NFC'), since, limit: 100_000 })) {
          const cells = [event.occurredAt.toISOString(), event.event, event.username ?? '-', event.outcome,
            event.clientIp ?? '-', event.userAgent ?? '-']
          process.stdout.write(`${cells.map(escapeControlCharacters).map((cell) => cell.replaceAll('\t', ' ')).join('\t')}\n`)
        }
        return 0
      })
    }
    case 'sessions revoke': {
      const { username } = invocation
      return await withAccounts(config, invocation.command, true, async (admin) => {
        const { account, ended } = await admin.revokeSessions(username)
        process.stderr.write(`${ended} active token(s) of ${account.username} ended\n`)
        return 0
      })
    }
  }
}

function describe (error: unknown): { message: string, code: number } {
  if (error instanceof UsageError) return { message: `${error.message}\n${USAGE}`, code: 2 }
  if (error instanceof Failure) return { message: error.message, code: 1 }
  if (error instanceof ConfigError) return { message: `configuration error: ${error.message}`, code: 1 }
  // NotMigratedError by its name: backends.js (where it is defined) is loaded only by the commands that need it.
  if ((error instanceof Error && error.name === 'NotMigratedError') || error instanceof DataDirBusyError || error instanceof DataDirLockError) return { message: error.message, code: 1 }
  if (error instanceof StatusError) {
    const messages: Record<number, string> = {
      400: 'invalid username or password (username 1-256 characters, password 1-1024 bytes)',
      404: 'no such account',
      409: 'that username is taken',
      503: 'the database or Redis cannot be reached'
    }
    return { message: messages[error.status] ?? error.message, code: 1 }
  }
  if (error instanceof Error && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')) {
    return { message: `${error.message}\n${USAGE}`, code: 2 }
  }
  return { message: error instanceof Error ? error.message : 'unexpected failure', code: 1 }
}

try {
  const code = await run(process.argv.slice(2))
  if (code >= 0) process.exitCode = code
} catch (error) {
  const { message, code } = describe(error)
  process.stderr.write(`auth-token-service: ${message}\n`)
  process.exitCode = code
}
