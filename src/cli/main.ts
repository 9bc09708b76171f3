#!/usr/bin/env node
import { parseArgs } from 'node:util'
import type { AccountAdmin } from '../accounts.js'
import type { Backends, ServiceTokenStore } from '../backends.js'
import { ConfigError, loadConfig, type Config } from '../config.js'
import { assertDataDirFree, DataDirBusyError, DataDirLockError } from '../db/data-dir-lock.js'
import type { Database } from '../db/database.js'
import type { UsernameReport } from '../db/canonical-usernames.js'
import { normalizeUsername } from '../credentials.js'
import { NotMigratedError } from '../db/migrate.js'
import { StatusError } from '../errors/status.js'
import type { AuditLog } from '../stores/audit-log.js'
import { RevocationIncomplete } from '../stores/token-store.js'
import { withTimeout } from '../time-limit.js'
import { tracingSettings } from '../tracing/settings.js'
import { readPassword } from './read-password.js'
import { AdminApiError } from '../admin/client.js'
import { formatExpirationDate } from '../tokens/time.js'
import { adminRoute } from './admin-route.js'
import { accountLine, eventLine, runThroughApi, sessionLine, type AccountCommand } from './api-commands.js'

// Only what every command needs is imported here; the drivers (PGlite, pg, ioredis, ldapts, the
// argon2 binding) are loaded by the commands that use them, so `--help` and a usage error stay cheap.

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
  user unlock <username>              lift the lock that failed logins put on the account
  user delete <username>              delete the account; ends its tokens (its audit events stay)
  sessions list <username>            the account's active sessions, one per line:
                                      id, created, last refresh, IP, user agent, expiry
  sessions revoke <username>          end all active tokens of the account
  events [--user NAME] [--since ISO]  print the audit events, oldest first

Account and session commands go through the admin API of a running service when
AUTH_ADMIN_URL (with AUTH_ADMIN_KEY or AUTH_ADMIN_KEY_FILE) is set, or when the service
holding the embedded data directory runs; otherwise they open the database themselves.

Configuration comes from the environment (DATABASE_URL, REDIS_URL, ...; see README).
Exit status: 0 success, 1 failure, 2 usage error.`

class UsageError extends Error {}
/** A failure whose message is already what the operator should read (exit 1). */
class Failure extends Error {}

type Invocation =
  | { command: 'help' }
  | { command: 'serve' }
  | { command: 'migrate' }
  | { command: 'user list' }
  | { command: 'user add', username: string, federated: boolean }
  | { command: 'events', username: string | undefined, since: Date | undefined }
  | { command: 'user passwd', username: string }
  | { command: 'user disable' | 'user enable' | 'user unlock' | 'user delete' | 'sessions revoke' | 'sessions list', username: string }

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
        case 'unlock':
        case 'delete':
          return sub === 'passwd' ? { command: 'user passwd', username: oneName(rest, 'user passwd') } : { command: `user ${sub}`, username: oneName(rest, `user ${sub}`) }
        case 'list':
          if (rest.length !== 0) throw new UsageError('user list takes no arguments')
          return { command: 'user list' }
        default:
          throw new UsageError(`unknown user command: ${sub ?? '(none)'}`)
      }
    case 'sessions':
      if (sub !== 'revoke' && sub !== 'list') throw new UsageError(`unknown sessions command: ${sub ?? '(none)'}`)
      return { command: `sessions ${sub}`, username: oneName(rest, `sessions ${sub}`) }
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
async function openConnectedTokenStore (config: Config, database: Database): Promise<ServiceTokenStore> {
  const { openTokenStore } = await import('../backends.js')
  if (config.redis === undefined) {
    // On the embedded database this process holds the data directory, so no service runs on these
    // accounts and their in-process tokens ended with it; on Postgres one may run, out of reach.
    if (database.kind === 'postgres') {
      process.stderr.write('warning: REDIS_URL is not set: tokens live inside the serving process, which this command cannot reach; ' +
        'restart a running service to end them\n')
    }
    return openTokenStore(config, quietLog)
  }
  const store = openTokenStore(config, quietLog)
  const waitMs = Math.max(2000, 4 * config.redisCommandTimeoutMs)
  try {
    await withTimeout(store.ready(), waitMs, () => { throw new Error('timeout') })
  } catch {
    await store.close()
    throw new Failure(`Redis cannot be reached (${config.redis.kind}) within ${waitMs} ms; nothing was changed`)
  }
  return store
}

/**
 * Runs `work` on the accounts. The database is opened first: on the embedded one that takes
 * its directory, or refuses at once (exit 1) while the service or another command has it.
 */
async function withAccounts<T> (config: Config, command: string, endsTokens: boolean, work: (admin: AccountAdmin, audit: AuditLog, backends: Backends) => Promise<T>): Promise<T> {
  const [{ openDatabase }, { migrateOrCheck }, { assembleBackends, openAuditLog }, { createMemoryTokenStore }, { createAccountAdmin, LOCAL_CLI_ACTOR }, { configuredPasswordPolicy }] = await Promise.all([
    import('../db/open.js'), import('../db/migrate.js'), import('../backends.js'), import('../stores/memory/token-store.js'), import('../accounts.js'),
    import('../passwords/policy.js')
  ])
  const database = await openDatabase(config, { command })
  let backends: Backends | undefined
  try {
    try {
      await migrateOrCheck(database)
    } catch (error) {
      throw unreachable('the database (DATABASE_URL)', error)
    }
    // Commands that end no tokens get an empty in-process store: nothing to connect to, nothing to end.
    const tokens = endsTokens ? await openConnectedTokenStore(config, database) : createMemoryTokenStore({ denyTtlMs: 1000 })
    // The service's own assembly: the same stores, and the hasher at the configured argon2 policy.
    backends = assembleBackends(config, { database, tokens, audit: openAuditLog(config, database, quietLog) })
    const { audit } = backends
    try {
      return await work(createAccountAdmin({ ...backends, actor: LOCAL_CLI_ACTOR, passwordPolicy: configuredPasswordPolicy(config.passwordMinLength) }), audit, backends)
    } finally {
      await audit.close()
    }
  } finally {
    if (backends === undefined) await database.close()
    else await backends.close()
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

/** An account command with the password it needs read from stdin (for the admin API). */
async function withPassword (invocation: Exclude<Invocation, { command: 'help' | 'serve' | 'migrate' }>): Promise<AccountCommand> {
  switch (invocation.command) {
    case 'user add':
      return { ...invocation, password: invocation.federated ? await optionalPasswordFromStdin() : await passwordFromStdin() }
    case 'user passwd':
      return { ...invocation, password: await passwordFromStdin() }
    default:
      return invocation
  }
}

/**
 * What `migrate` did to stored usernames. Accounts whose canonical forms collide are never
 * merged: they are listed, untouched, and the command fails until an operator resolves them
 * (README, "Canonical usernames").
 */
function reportUsernames ({ renamed, collisions, refused }: UsernameReport): number {
  const name = (username: string): string => JSON.stringify(username)
  for (const { id, from, to } of renamed) process.stderr.write(`username of account ${id} made canonical: ${name(from)} -> ${name(to)}\n`)
  for (const { canonical, accounts } of collisions) {
    process.stderr.write(`accounts ${accounts.map(({ id, username }) => `${id} ${name(username)}`).join(', ')} are all ${name(canonical)} in canonical form: left as they are, not merged\n`)
  }
  for (const { id, username } of refused) process.stderr.write(`account ${id} ${name(username)} has no canonical form (a space, control or invisible character): left as it is, it cannot log in\n`)
  if (collisions.length === 0 && refused.length === 0) return 0
  process.stderr.write('auth-token-service: resolve the accounts above (rename or delete all but one of each group; see README, Canonical usernames), then run migrate again\n')
  return 1
}

async function run (argv: string[]): Promise<number> {
  const invocation = parseCommandLine(argv)
  if (invocation.command === 'help') {
    process.stdout.write(`${USAGE}\n`)
    return 0
  }
  const config = loadConfig()

  if (invocation.command !== 'serve' && invocation.command !== 'migrate') {
    const route = await adminRoute(config)
    if (route !== undefined && 'problem' in route) throw new Failure(route.problem)
    if (route !== undefined) return await runThroughApi(route, await withPassword(invocation))
  }

  switch (invocation.command) {
    case 'serve': {
      // Tracing first: its module hooks must be in place before the app imports ioredis and pg.
      // Off (no OTLP endpoint), nothing of OpenTelemetry is loaded (tracing/settings.ts imports none).
      const settings = tracingSettings(process.env)
      const tracing = settings === undefined ? undefined : await (await import('../tracing/start.js')).startTracing(settings)
      const { startServer } = await import('../server.js')
      await startServer(config, { tracing })
      return -1
    }
    case 'migrate': {
      const [{ openDatabase }, { migrate }] = await Promise.all([import('../db/open.js'), import('../db/migrate.js')])
      const database = await openDatabase(config, { command: 'migrate' })
      try {
        const { applied, usernames } = await migrate(database).catch((error: unknown) => { throw unreachable('the database (DATABASE_URL)', error) })
        process.stderr.write(applied.length === 0 ? 'migrations: up to date\n' : `migrations applied: ${applied.join(', ')}\n`)
        return reportUsernames(usernames)
      } finally {
        await database.close()
      }
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
        for (const account of await admin.list()) process.stdout.write(accountLine(account))
        return 0
      })
    case 'user unlock': {
      const { username } = invocation
      // Locks live beside the tokens: in Redis, or (embedded, no service running) nowhere any more.
      return await withAccounts(config, invocation.command, true, async (admin) => {
        const account = await admin.unlock(username)
        process.stderr.write(`${account.username} unlocked\n`)
        return 0
      })
    }
    case 'user delete': {
      const { username } = invocation
      return await withAccounts(config, invocation.command, true, async (admin) => {
        const { account, ended } = await admin.remove(username)
        process.stderr.write(`${account.username} deleted; ${ended} active token(s) ended\n`)
        return 0
      })
    }
    case 'sessions list': {
      const { username } = invocation
      const { createSqlSessions } = await import('../sessions/sql-sessions.js')
      return await withAccounts(config, invocation.command, true, async (admin, audit, backends) => {
        const account = await admin.show(username)
        const sessions = createSqlSessions({ db: backends.database, tokens: backends.tokens, audit })
        for (const session of await sessions.list(account.id)) {
          process.stdout.write(sessionLine({
            id: session.id,
            created: formatExpirationDate(session.created),
            refreshed: session.refreshed === null ? null : formatExpirationDate(session.refreshed),
            ip: session.ip,
            userAgent: session.userAgent,
            expires: formatExpirationDate(session.expiresAt)
          }))
        }
        return 0
      })
    }
    case 'events': {
      const { username, since } = invocation
      return await withAccounts(config, invocation.command, false, async (_admin, audit) => {
        for (const event of await audit.list({ username: username === undefined ? undefined : normalizeUsername(username), since, limit: 100_000 })) {
          process.stdout.write(eventLine({ ...event, time: event.occurredAt.toISOString(), username: event.username ?? null, clientIp: event.clientIp ?? null, userAgent: event.userAgent ?? null }))
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
  // The admin API's refusal: its detail (what is wrong, never a value sent), or what went wrong reaching it.
  if (error instanceof AdminApiError) return { message: error.message, code: 1 }
  if (error instanceof UsageError) return { message: `${error.message}\n${USAGE}`, code: 2 }
  if (error instanceof Failure) return { message: error.message, code: 1 }
  if (error instanceof ConfigError) return { message: `configuration error: ${error.message}`, code: 1 }
  if (error instanceof NotMigratedError || error instanceof DataDirBusyError || error instanceof DataDirLockError) return { message: error.message, code: 1 }
  if (error instanceof RevocationIncomplete) {
    return {
      message: `Redis failed part way: ${error.ended} active token(s) ended; the account's other tokens may still be active ` +
        '(no Login begun before this command will get a new one): run the command again',
      code: 1
    }
  }
  if (error instanceof StatusError) {
    // A refused username or password: the reason, which names the rule and never the value.
    if (error.status === 400 && error.detail !== undefined) return { message: error.detail, code: 1 }
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
