import { PARAMETER_LIMITS, reasons, type PasswordParameter, type Reason } from '../errors/reasons.js'

/**
 * What a password this service sets must be (NIST SP 800-63B §3.1.1.2): long
 * enough, not absurdly long, not a common or breached password, not the username. No
 * composition rules and no expiry: NIST advises against both. Checked where a password is
 * set (the command line, the bootstrap, later the admin API and password change), never at
 * Login: existing hashes keep logging in, and directory passwords follow the directory.
 */
export interface PasswordPolicy {
  /** Fewest characters (code points), AUTH_PASSWORD_MIN_LENGTH: 8 by default, 15 advised for single-factor use. */
  minLength: number
  /** Refuse passwords on the offline list of common and breached ones. */
  blocklist: boolean
  /** Refuse a password that is or holds the username. */
  refuseUsername: boolean
}

export const DEFAULT_PASSWORD_POLICY: PasswordPolicy = Object.freeze({ minLength: 8, blocklist: true, refuseUsername: true })

/** The policy the service and the command line both set passwords by: AUTH_PASSWORD_MIN_LENGTH, the list, the username. */
export function configuredPasswordPolicy (minLength: number): PasswordPolicy {
  return { minLength, blocklist: true, refuseUsername: true }
}

/** Usernames shorter than this are not looked for inside a password (a one-letter name is in most). */
const USERNAME_IN_PASSWORD_MIN = 4

/**
 * The form both sides are compared in: compatibility-normalized and lowercased, so `PASSWORD`,
 * `Ｐａｓｓｗｏｒｄ` and `password` are one entry of the list.
 */
function comparable (text: string): string {
  return text.normalize('NFKC').toLowerCase()
}

let blocklist: Promise<ReadonlySet<string>> | undefined

/**
 * The list, loaded at the first use (about 49,000 passwords: zxcvbn-ts's common-password
 * dictionary, drawn from breach corpora), shipped in the package: no network at run time.
 */
async function commonPasswords (): Promise<ReadonlySet<string>> {
  blocklist ??= import('@zxcvbn-ts/language-common').then(({ dictionary }) => {
    const list = dictionary['passwords-common']
    if (!Array.isArray(list) || list.length < 10_000) throw new Error('the common-password list is missing or short')
    return new Set(list.map((entry) => comparable(String(entry))))
  })
  return await blocklist
}

/** How many passwords the offline list holds (for docs/security.md's figure and the tests). */
export async function blocklistSize (): Promise<number> {
  return (await commonPasswords()).size
}

/**
 * Why this password cannot be set for this account, or undefined when it can. `password` is
 * NFC-normalized as it will be hashed; `username` canonical (src/core/usernames.ts); `parameter` the
 * one the reason names (POST /auth/Password's is `new_password`).
 */
export async function passwordRefusal (password: string, username: string, policy: PasswordPolicy, parameter: PasswordParameter = 'password'): Promise<Reason | undefined> {
  // Characters as a person counts them: a code point each (NIST: each Unicode code point is one).
  const length = [...password].length
  if (length < policy.minLength) return reasons.passwordTooShort(policy.minLength, parameter)
  if (Buffer.byteLength(password, 'utf8') > PARAMETER_LIMITS.password.max) return reasons.tooLong(parameter)
  const candidate = comparable(password)
  const name = comparable(username)
  if (policy.refuseUsername && (candidate === name || ([...name].length >= USERNAME_IN_PASSWORD_MIN && candidate.includes(name)))) return reasons.passwordHasUsername(parameter)
  if (policy.blocklist && (await commonPasswords()).has(candidate)) return reasons.passwordCommon(parameter)
  return undefined
}
