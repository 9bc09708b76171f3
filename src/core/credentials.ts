import { PARAMETER_LIMITS, reasons, type PasswordParameter, type Reason } from '../errors/reasons.js'
import { badRequest } from '../errors/status.js'
import { mapUsername, usernameRefusal } from './usernames.js'

/**
 * The rules a username and a password follow, wherever one comes in (Login, the command
 * line, the bootstrap account): the username's canonical form (usernames.ts), the password's
 * NFC, then the limits of the answers table of docs/api.md (kept with
 * the other parameters' in errors/reasons.ts). A value that breaks one is a 400 whose
 * detail names the parameter, never the value.
 */

export const USERNAME_MAX_CHARS = PARAMETER_LIMITS.username.max
export const PASSWORD_MAX_BYTES = PARAMETER_LIMITS.password.max

/**
 * Usernames are stored and compared in their canonical form (src/core/usernames.ts: width-mapped,
 * case-folded, NFC); usernameProblem refuses what cannot be one.
 */
export function normalizeUsername (username: string): string {
  return mapUsername(username)
}

/** Passwords are NFC-normalized before hashing and checking, exact otherwise. */
export function normalizePassword (password: string): string {
  return password.normalize('NFC')
}

function isAcceptableUsername (normalized: string): boolean {
  // Length in code points, so an emoji counts once.
  let count = 0
  for (const _ of normalized) {
    if (++count > USERNAME_MAX_CHARS) return false
  }
  return count >= 1
}

function isAcceptablePassword (password: string): boolean {
  return password.length >= 1 && Buffer.byteLength(password, 'utf8') <= PASSWORD_MAX_BYTES
}

/** Why a normalized username cannot be one, or undefined when it can. */
export function usernameProblem (normalized: string): Reason | undefined {
  if (!isAcceptableUsername(normalized)) return normalized.length === 0 ? reasons.empty('username') : reasons.tooLong('username')
  const refusal = usernameRefusal(normalized)
  if (refusal === 'refused-character') return reasons.usernameRefusedCharacter()
  if (refusal === 'compatibility-character') return reasons.usernameCompatibilityCharacter()
  return undefined
}

/** Why a normalized password cannot be one, or undefined when it can. */
export function passwordProblem (normalized: string, parameter: PasswordParameter = 'password'): Reason | undefined {
  if (isAcceptablePassword(normalized)) return undefined
  return normalized.length === 0 ? reasons.empty(parameter) : reasons.tooLong(parameter)
}

/** The username as stored and compared (canonical); a 400 when it breaks a rule. */
export function checkedUsername (raw: string): string {
  const username = normalizeUsername(raw)
  const problem = usernameProblem(username)
  if (problem !== undefined) throw badRequest(problem)
  return username
}

/** The password as hashed and checked (NFC); a 400 when it breaks a rule. */
export function checkedPassword (raw: string, parameter: PasswordParameter = 'password'): string {
  const password = normalizePassword(raw)
  const problem = passwordProblem(password, parameter)
  if (problem !== undefined) throw badRequest(problem)
  return password
}
