import { AdminApiError } from '../admin/client.js'
import { ConfigError } from '../config/config-error.js'
import { DataDirBusyError, DataDirLockError } from '../db/data-dir-lock.js'
import { NotMigratedError } from '../db/migrate.js'
import { StatusError } from '../errors/status.js'
import { RevocationIncomplete } from '../core/stores/token-store.js'
import { EXIT, UsageError, usageErrorText } from './parse.js'

export { EXIT } from './parse.js'

/** A failure whose message is already what the operator should read (exit 1). */
export class Failure extends Error {}

/** Network-level failures (ECONNREFUSED, ENOTFOUND, ...) of a driver, as one readable line. */
export function unreachable (what: string, error: unknown): unknown {
  const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : ''
  if (/^E[A-Z]+$/.test(code) || (error instanceof Error && /timeout/i.test(error.message))) {
    return new Failure(`${what} cannot be reached: ${error instanceof Error ? error.message : code}`)
  }
  return error
}

/**
 * Any error of any command, as one line for stderr and its exit status: both adapters' refusals
 * end here, so a script reads a failure alike whether a running service or the database answered.
 */
export function describe (error: unknown): { message: string, code: number } {
  // The admin API's refusal: its detail (what is wrong, never a value sent), or what went wrong reaching it.
  if (error instanceof AdminApiError) return { message: error.message, code: EXIT.failure }
  if (error instanceof UsageError) return { message: usageErrorText(error), code: EXIT.usage }
  if (error instanceof Failure) return { message: error.message, code: EXIT.failure }
  if (error instanceof ConfigError) return { message: `configuration error: ${error.message}`, code: EXIT.failure }
  if (error instanceof NotMigratedError || error instanceof DataDirBusyError || error instanceof DataDirLockError) return { message: error.message, code: EXIT.failure }
  if (error instanceof RevocationIncomplete) {
    return {
      message: `Redis failed part way: ${error.ended} active token(s) ended; the account's other tokens may still be active ` +
        '(no Login begun before this command will get a new one): run the command again',
      code: EXIT.failure
    }
  }
  if (error instanceof StatusError) {
    // A refused username or password: the reason, which names the rule and never the value.
    if (error.status === 400 && error.detail !== undefined) return { message: error.detail, code: EXIT.failure }
    // The key commands' refusals (no such key, a disabled account) carry their own detail.
    if ((error.status === 404 || error.status === 409) && error.detail !== undefined) return { message: error.detail, code: EXIT.failure }
    const messages: Record<number, string> = {
      400: 'invalid username or password (username 1-256 characters, password 1-1024 bytes)',
      404: 'no such account',
      409: 'that username is taken',
      503: 'the database or Redis cannot be reached'
    }
    return { message: messages[error.status] ?? error.message, code: EXIT.failure }
  }
  return { message: error instanceof Error ? error.message : 'unexpected failure', code: EXIT.failure }
}
