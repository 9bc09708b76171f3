import { loginFailed, secondFactorRequired, StatusError, tooManyRequests } from '../../errors/status.js'
import type { AuditLog } from '../stores/audit-log.js'
import type { LoginLimiter } from '../stores/login-limiter.js'
import type { UserRecord } from '../stores/user-store.js'
import type { OutcomeOf } from '../events.js'
import type { LoginSecondFactor, SignInMethod } from '../ports.js'
import type { CheckCredentials } from './account-credentials.js'
import type { GroupChanges } from '../groups.js'
import type { ClientContext } from './types.js'

/**
 * Login's gate, which every way into an account passes: the brute-force limits (read-only while
 * locked), the credentials' check (account-credentials.ts), the second factor, and each failure
 * counted and audited. Login, the account's own password change, second-factor removal and
 * step-up all check a password through this.
 */

export interface PasswordCheckDeps {
  /** Which account the username and password open (account-credentials.ts). */
  checkCredentials: CheckCredentials
  limiter: LoginLimiter
  audit: AuditLog
  /** Absent: no account has a second factor. */
  secondFactor?: Pick<LoginSecondFactor, 'verify'> | undefined
  /** Where a federated account's directory groups are stored at each check; absent: not stored. */
  groupChanges?: GroupChanges | undefined
}

/** An account whose password (and code) held, and the methods that proved it (the sign-in's amr). */
export interface CheckedSignIn {
  account: UserRecord
  amr: readonly SignInMethod[]
}

export interface PasswordCheck {
  /**
   * A username and password, with everything around them: the limits, one verify, failures
   * counted and audited, a success settled against failures sent alongside; with `factor`, the
   * account's second factor after the password. The account, or the error a Login would answer.
   */
  check (username: string, password: string, client: ClientContext, factor?: { otp: string | undefined }): Promise<UserRecord>
  /** `check` for a Login: the account, and how it was proved (a password, and a code when its second factor asked one). */
  signIn (username: string, password: string, client: ClientContext, factor: { otp: string | undefined }): Promise<CheckedSignIn>
  /** Read-only: an attempt while locked neither runs a check nor extends the lock (429). */
  allowed (username: string, client: ClientContext): Promise<void>
  /** A failed attempt, counted against the account and the address and audited; always throws (701, or 429 once locked). */
  failed (username: string, client: ClientContext, accountId: string | undefined, outcome: OutcomeOf<'login.failure'>): Promise<never>
  /** A success settled against failures sent alongside: a right guess among parallel wrong ones that locked the account first is refused like them. */
  settled (username: string, client: ClientContext, account: UserRecord): Promise<void>
}

const PASSWORD_ONLY: readonly SignInMethod[] = ['pwd']
const PASSWORD_AND_CODE: readonly SignInMethod[] = ['pwd', 'otp']

export function createPasswordCheck ({ checkCredentials, limiter, audit, secondFactor, groupChanges }: PasswordCheckDeps): PasswordCheck {
  /**
   * The directory's groups, as it named them for this password, stored as the account's directory
   * set (before the second factor: they are the directory's word, not the caller's gain). A change
   * reaches the account's live tokens as an administrator's does; the account as read after it, so
   * the token about to be issued carries them with their version.
   */
  async function withDirectoryGroups (account: UserRecord, groups: readonly string[], client: ClientContext): Promise<UserRecord> {
    const set = await groupChanges?.set(account.username, 'directory', groups, { clientIp: client.ip, userAgent: client.userAgent })
    return set === null || set === undefined ? account : { ...account, groups: set.after, groupsVersion: set.version }
  }

  async function failed (username: string, client: ClientContext, accountId: string | undefined, outcome: OutcomeOf<'login.failure'>): Promise<never> {
    const context = { username, clientIp: client.ip, userAgent: client.userAgent }
    const failure = await limiter.recordFailure(username, client.ip)
    if (!failure.counted) {
      // Locked meanwhile by failures sent alongside: no answer about this password either.
      audit.record({ event: 'login.refused', ...context, accountId, outcome: 'account-locked' })
      throw tooManyRequests(failure.retryAfterMs / 1000)
    }
    audit.record({ event: 'login.failure', ...context, accountId, outcome })
    if (failure.lockedForMs > 0) audit.record({ event: 'login.lockout', ...context, accountId, outcome: `locked-${Math.ceil(failure.lockedForMs / 1000)}s` satisfies OutcomeOf<'account.locked'> })
    throw loginFailed()
  }

  async function settled (username: string, client: ClientContext, account: UserRecord): Promise<void> {
    const verdict = await limiter.recordSuccess(username)
    if (!verdict.allowed) {
      audit.record({ event: 'login.refused', username, clientIp: client.ip, userAgent: client.userAgent, accountId: account.id, outcome: verdict.reason })
      throw tooManyRequests(verdict.retryAfterMs / 1000)
    }
  }

  async function allowed (username: string, client: ClientContext): Promise<void> {
    const verdict = await limiter.check(username, client.ip)
    if (!verdict.allowed) {
      audit.record({ event: 'login.refused', username, clientIp: client.ip, userAgent: client.userAgent, outcome: verdict.reason })
      throw tooManyRequests(verdict.retryAfterMs / 1000)
    }
  }

  async function signIn (username: string, password: string, client: ClientContext, factor?: { otp: string | undefined }): Promise<CheckedSignIn> {
    const context = { username, clientIp: client.ip, userAgent: client.userAgent }

    /** A failure of the caller's (a password or a code): counted, audited, 701 (or 429 when locked meanwhile). */
    const refuse = async (outcome: OutcomeOf<'login.failure'>, account: UserRecord | undefined): Promise<never> => await failed(username, client, account?.id, outcome)

    // Read-only: an attempt while locked neither runs a hash nor extends the lock.
    await allowed(username, client)

    // A backend failure here is a 503 and counts nothing: only failures of the caller's count.
    const checked = await checkCredentials(username, password, { account: username, ip: client.ip }).catch((error: unknown) => {
      // This account or address already holds its share of the hash queue (passwords/fair-queue.ts): 429, nothing counted.
      if (error instanceof StatusError && error.status === 429) audit.record({ event: 'login.refused', ...context, outcome: 'hash-share' })
      throw error
    })
    if (!checked.ok) return await refuse(checked.outcome, checked.account)
    if (checked.account.username !== username) {
      // The directory named another account than the one typed: its own lock holds too.
      const own = await limiter.check(checked.account.username, client.ip)
      if (!own.allowed) {
        audit.record({ event: 'login.refused', ...context, accountId: checked.account.id, outcome: own.reason })
        throw tooManyRequests(own.retryAfterMs / 1000)
      }
    }
    if (checked.directoryGroups !== undefined && groupChanges !== undefined) checked.account = await withDirectoryGroups(checked.account, checked.directoryGroups, client)
    let amr = PASSWORD_ONLY
    if (factor !== undefined && secondFactor !== undefined) {
      // After the password (and the directory's bind), before the success is settled: a right
      // password without the code must not reset the account's failure count.
      const second = await secondFactor.verify(checked.account, factor.otp, { clientIp: client.ip, userAgent: client.userAgent })
      if (second.kind === 'missing') {
        audit.record({ event: 'login.refused', ...context, accountId: checked.account.id, outcome: 'second-factor-required' })
        const { id: accountId, username: held, tokenEpoch } = checked.account
        throw secondFactorRequired({ accountId, username: held, tokenEpoch })
      }
      if (second.kind === 'refused') return await refuse(second.outcome, checked.account)
      if (second.kind === 'accepted') amr = PASSWORD_AND_CODE
    }
    await settled(username, client, checked.account)
    return { account: checked.account, amr }
  }

  return {
    check: async (username, password, client, factor) => (await signIn(username, password, client, factor)).account,
    signIn,
    allowed,
    failed,
    settled
  }
}
