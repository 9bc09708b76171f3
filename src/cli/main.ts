#!/usr/bin/env node
import { parseArgs } from 'node:util'
import { ConfigError, loadConfig, type Config } from '../config.js'
import { openDatabase } from '../db/open.js'
import { migrate } from '../db/migrate.js'
import { StatusError } from '../lib/status.js'
import { createAccountAdmin, type AccountAdmin } from '../accounts.js'
import { createPasswordHasher } from '../lib/passwords.js'
import { openTokenStore, NotMigratedError } from '../backends.js'
import { createSqlUserStore } from '../stores/user-store.js'
import { readPassword } from './read-password.js'

const USAGE = `usage: auth-token-service <command>

commands:
  serve                               start the service (what npm start runs)
  migrate                             apply the SQL migrations in sql/ (idempotent)
  user add <username> [--federated]   create an account; password: first line of stdin
  user passwd <username>              set a new password from stdin; ends the account's tokens
  user disable <username>             disable the account; ends its tokens
  user enable <username>              enable the account again
  user list                           one account per line
  sessions revoke <username>          end all active tokens of the account

Configuration comes from the environment (DATABASE_URL, REDIS_URL, ...; see README).
Exit status: 0 success, 1 failure, 2 usage error.`

class UsageError extends Error {}

const quietLog = {
  info: () => {},
  warn: (o: unknown, message?: string) => { process.stderr.write(`warning: ${message ?? String(o)}\n`) },
  error: (o: unknown, message?: string) => { process.stderr.write(`error: ${message ?? String(o)}\n`) }
}

async function withAccounts<T> (config: Config, work: (admin: AccountAdmin) => Promise<T>): Promise<T> {
  const database = await openDatabase(config)
  if (database.kind === 'pglite') await migrate(database)
  const tokens = openTokenStore(config, quietLog)
  try {
    return await work(createAccountAdmin(createSqlUserStore(database), tokens, createPasswordHasher(config.argon2)))
  } finally {
    await Promise.allSettled([tokens.close(), database.close()])
  }
}

async function passwordFromStdin (): Promise<string> {
  const password = await readPassword()
  if (password === undefined || password === '') throw new UsageError('a password is required on the first line of standard input')
  return password
}

function oneName (positionals: string[], command: string): string {
  if (positionals.length !== 1 || positionals[0] === undefined) throw new UsageError(`${command} takes exactly one <username>`)
  return positionals[0]
}

async function run (argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: { federated: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } }
  })
  const [command, sub, ...rest] = positionals
  if (values.help === true || command === undefined) {
    process.stdout.write(`${USAGE}\n`)
    return values.help === true ? 0 : 2
  }
  if (values.federated === true && !(command === 'user' && sub === 'add')) throw new UsageError('--federated belongs to `user add`')
  const config = loadConfig()

  switch (command) {
    case 'serve': {
      if (sub !== undefined) throw new UsageError('serve takes no arguments')
      const { startServer } = await import('../server.js')
      await startServer(config)
      return -1
    }
    case 'migrate': {
      if (sub !== undefined) throw new UsageError('migrate takes no arguments')
      const database = await openDatabase(config)
      try {
        const { applied } = await migrate(database)
        process.stderr.write(applied.length === 0 ? 'migrations: up to date\n' : `migrations applied: ${applied.join(', ')}\n`)
      } finally {
        await database.close()
      }
      return 0
    }
    case 'user':
      return await withAccounts(config, async (admin) => {
        switch (sub) {
          case 'add': {
            const name = oneName(rest, 'user add')
            const account = await admin.add(name, await passwordFromStdin(), values.federated === true)
            process.stderr.write(`created ${account.federated ? 'federated ' : ''}account ${account.username}\n`)
            return 0
          }
          case 'passwd': {
            const name = oneName(rest, 'user passwd')
            const { account, ended } = await admin.setPassword(name, await passwordFromStdin())
            process.stderr.write(`password changed for ${account.username}; ${ended} active token(s) ended\n`)
            return 0
          }
          case 'disable':
          case 'enable': {
            const name = oneName(rest, `user ${sub}`)
            const { account, ended } = await admin.setDisabled(name, sub === 'disable')
            process.stderr.write(`${account.username} ${sub}d${sub === 'disable' ? `; ${ended} active token(s) ended` : ''}\n`)
            return 0
          }
          case 'list': {
            if (rest.length !== 0) throw new UsageError('user list takes no arguments')
            for (const account of await admin.list()) {
              const flags = [account.federated ? 'federated' : 'local', account.disabled ? 'disabled' : 'enabled']
              process.stdout.write(`${account.username}\t${flags.join('\t')}\n`)
            }
            return 0
          }
          default:
            throw new UsageError(`unknown user command: ${sub ?? '(none)'}`)
        }
      })
    case 'sessions':
      if (sub !== 'revoke') throw new UsageError(`unknown sessions command: ${sub ?? '(none)'}`)
      return await withAccounts(config, async (admin) => {
        const { account, ended } = await admin.revokeSessions(oneName(rest, 'sessions revoke'))
        process.stderr.write(`${ended} active token(s) of ${account.username} ended\n`)
        return 0
      })
    default:
      throw new UsageError(`unknown command: ${command}`)
  }
}

function describe (error: unknown): { message: string, code: number } {
  if (error instanceof UsageError) return { message: `${error.message}\n${USAGE}`, code: 2 }
  if (error instanceof ConfigError) return { message: `configuration error: ${error.message}`, code: 1 }
  if (error instanceof NotMigratedError) return { message: error.message, code: 1 }
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
