import type { PasswordHasher } from '../../passwords/hasher.js'
import { passwordRefusal, type PasswordPolicy } from '../../passwords/policy.js'
import { badRequest, StatusError, unauthorized } from '../../errors/status.js'
import { reasons } from '../../errors/reasons.js'
import { checkedPassword } from '../credentials.js'
import { hashToken, isTokenShaped } from '@auth-token-service/protocol/token'
import type { AuditLog } from '../stores/audit-log.js'
import { RevocationIncomplete, type TokenStore } from '../stores/token-store.js'
import type { UserStore } from '../stores/user-store.js'
import type { OutcomeOf } from '../events.js'
import type { LoginSecondFactor, SessionRecorder } from '../ports.js'
import type { PasswordCheck } from './password-check.js'
import type { AuthService } from './types.js'
import { activeOrRefused } from './verify.js'

/**
 * What the account does for itself with its token and its password: a new password, its second
 * factor removed, a step-up before what outlives the token. The current password passes the same
 * gate as a Login (password-check.ts): the same limits, counting and lockout.
 */

/** A federated account's password is the directory's to change (403). */
export const federatedPassword = (): StatusError =>
  new StatusError(403, 'Forbidden', 403, {}, { detail: reasons.federatedPassword() })

export interface SelfServiceDeps {
  users: UserStore
  tokens: TokenStore
  hasher: PasswordHasher
  audit: AuditLog
  gate: PasswordCheck
  /** Authenticate (verify.ts): the caller's token's record. */
  authenticate: AuthService['authenticate']
  /** What a new password must be. */
  passwordPolicy: PasswordPolicy
  /** Where the ended tokens' sessions go; absent: none kept. */
  sessions?: SessionRecorder | undefined
  /** Absent: no account has a second factor to remove. */
  secondFactor?: Pick<LoginSecondFactor, 'remove'> | undefined
}

export function createSelfService (deps: SelfServiceDeps): Pick<AuthService, 'changePassword' | 'removeSecondFactor' | 'stepUp'> {
  const { users, tokens, hasher, audit, gate, authenticate, passwordPolicy, sessions, secondFactor } = deps
  return {
    async changePassword ({ token, currentPassword, newPassword, client }) {
      // Both refused before any hashing or counting, as Login refuses a megabyte password.
      const current = checkedPassword(currentPassword, 'current_password')
      const next = checkedPassword(newPassword, 'new_password')
      if (token === undefined || !isTokenShaped(token)) throw unauthorized()
      const tokenHash = hashToken(token)
      const holder = activeOrRefused(await tokens.find(tokenHash))
      if (holder.federated) throw federatedPassword()
      const account = await gate.check(holder.username, current, client)
      // The name now belongs to another account than the token's (deleted and made again): not yours.
      if (account.id !== holder.accountId) throw unauthorized()
      if (account.federated) throw federatedPassword()
      const refusal = await passwordRefusal(next, account.username, passwordPolicy, 'new_password')
      if (refusal !== undefined) throw badRequest(refusal)
      const updated = await users.setPasswordHash(account.username, await hasher.hash(next, { account: account.username, ip: client.ip }))
      if (updated === null) throw unauthorized()
      const context = { event: 'password.change' as const, username: updated.username, accountId: updated.id, clientIp: client.ip, userAgent: client.userAgent }
      let ended: string[]
      try {
        // The new epoch beside the account's tokens, every token but the caller's ended, in one
        // revoke-all: a Login with the old password still under way gets nothing, and the
        // caller's token, kept, refreshes on the new epoch its next Login reads.
        ended = await tokens.terminateAccount(updated.id, updated.tokenEpoch, tokenHash)
      } catch (error) {
        if (error instanceof RevocationIncomplete) audit.record({ ...context, outcome: `tokens-ended-${error.ended}-incomplete` satisfies OutcomeOf<'password.changed'>, tokensEnded: error.ended })
        throw error
      }
      await sessions?.ended(ended)
      audit.record({ ...context, outcome: `tokens-ended-${ended.length}` satisfies OutcomeOf<'password.changed'>, tokensEnded: ended.length })
      return { ended: ended.length }
    },

    async removeSecondFactor ({ token, currentPassword, code, client }) {
      const current = checkedPassword(currentPassword, 'current_password')
      if (token === undefined || !isTokenShaped(token)) throw unauthorized()
      const holder = activeOrRefused(await tokens.find(hashToken(token)))
      if (code === undefined || code === '') throw badRequest(reasons.required('code'))
      // The code goes where Login's otp goes: the same check, counting and lockout.
      const account = await gate.check(holder.username, current, client, { otp: code })
      if (account.id !== holder.accountId) throw unauthorized()
      if (secondFactor === undefined || !await secondFactor.remove(account, { clientIp: client.ip, userAgent: client.userAgent }, 'removed')) {
        throw badRequest(reasons.totpNotActive())
      }
    },

    async stepUp ({ token, currentPassword, client }) {
      // Refused before any hashing or counting, as Login refuses a megabyte password.
      const current = checkedPassword(currentPassword, 'current_password')
      const holder = await authenticate(token)
      const account = await gate.check(holder.username, current, client)
      // The name now belongs to another account than the token's (deleted and made again): not yours.
      if (account.id !== holder.accountId) throw unauthorized()
      return account
    }
  }
}
