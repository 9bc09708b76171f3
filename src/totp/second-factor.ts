import { randomBytes } from 'node:crypto'
import { reasons } from '../errors/reasons.js'
import { badRequest, StatusError } from '../errors/status.js'
import type { AuditEvent, AuditLog } from '../core/stores/audit-log.js'
import type { TotpStore } from './store.js'
import type { UserRecord } from '../core/stores/user-store.js'
import type { OutcomeOf } from '../core/events.js'
import type { AuditActor, FactorVerdict } from '../core/ports.js'
import { canonicalRecoveryCode, generateRecoveryCode, hashRecoveryCode, RECOVERY_CODE_COUNT } from './recovery-codes.js'
import { base32Encode, CODE_SHAPE, matchingStep, normalizedCode, otpauthUri } from './rfc6238.js'
import { openSecret, sealSecret, type TotpKeys } from './sealed-secret.js'

/**
 * The second factor: TOTP enrollment, its confirmation and removal, and the check
 * Login makes after the password. No HTTP here; refusals are StatusError values. Audit events
 * name what happened, never a code or a secret: `totp.enrolled` (an enrollment waits),
 * `totp.enabled` (confirmed), `totp.disabled` (outcome `removed` by the account, `reset` by an
 * administrator), `totp.recovery_used` (outcome `remaining-N`).
 */

/** RFC 4226 §4 asks for at least 128 bits and recommends 160: 20 bytes, as authenticator apps expect. */
export const TOTP_SECRET_BYTES = 20

export interface Enrollment {
  /** Base32, as an authenticator app takes it typed. */
  secret: string
  otpauthUri: string
  recoveryCodes: string[]
}

/** Who acts, for the audit trail. */

export interface SecondFactor {
  /** Login's check after the right password: the verdict for `otp` (a TOTP code or a recovery code). */
  verify (account: UserRecord, otp: string | undefined, actor: AuditActor): Promise<FactorVerdict>
  /** Whether the account has an active factor (the admin view's `totp`). */
  isActive (accountId: string): Promise<boolean>
  /** A new secret and recovery codes, waiting for confirmation; 409 while a factor is active. */
  begin (account: UserRecord, actor: AuditActor): Promise<Enrollment>
  /** Activates the waiting enrollment with a code of its secret; 400 when none waits or the code does not match. */
  confirm (account: UserRecord, code: string, actor: AuditActor): Promise<void>
  /** Removes the factor, active or waiting; false when there was none. */
  remove (account: Pick<UserRecord, 'id' | 'username'>, actor: AuditActor, outcome: 'removed' | 'reset'): Promise<boolean>
}

export interface SecondFactorDeps {
  store: TotpStore
  audit: AuditLog
  /** The sealing keys, resolved at first use (config.ts, key-file.ts). */
  keys: () => Promise<TotpKeys>
  /** The `issuer` an authenticator app shows beside the account name. */
  issuer: string
  /** Told when a sealed secret opens with no configured key (a wrong or lost AUTH_TOTP_KEY). */
  onUnreadable?: (accountId: string) => void
  /** Wall clock in epoch ms; injectable for tests. */
  now?: () => number
}

const conflict = (): StatusError => new StatusError(409, 'Conflict', 409, {}, { detail: reasons.totpAlreadyActive() })

export function createSecondFactor (deps: SecondFactorDeps): SecondFactor {
  const { store, audit, keys, issuer } = deps
  const now = deps.now ?? Date.now
  const record = (account: Pick<UserRecord, 'id' | 'username'>, actor: AuditActor, event: AuditEvent['event'], outcome: string): void => {
    audit.record({ event, username: account.username, accountId: account.id, ...actor, outcome })
  }

  /** The secret, sealed again with the current key when a previous one opened it (a rotation). */
  async function secretOf (accountId: string, sealed: string): Promise<Buffer | undefined> {
    const ring = await keys()
    const opened = openSecret(ring, sealed, accountId)
    if (opened === undefined) {
      deps.onUnreadable?.(accountId)
      return undefined
    }
    if (opened.stale) await store.reseal(accountId, sealSecret(ring.current, opened.secret, accountId)).catch(() => {})
    return opened.secret
  }

  return {
    async verify (account, otp, actor) {
      // Read with the account (Login's findByUsername): none active then, none asked for. A factor
      // confirmed in the moment between that read and this one applies from the next Login.
      if (account.secondFactor === false) return { kind: 'none' }
      const factor = await store.find(account.id)
      if (factor === null || !factor.active) return { kind: 'none' }
      if (otp === undefined || otp === '') return { kind: 'missing' }
      const code = normalizedCode(otp)
      if (CODE_SHAPE.test(code)) {
        const secret = await secretOf(account.id, factor.sealed)
        if (secret === undefined) return { kind: 'refused', outcome: 'secret-unreadable' }
        const step = matchingStep(secret, code, now())
        if (step === undefined) return { kind: 'refused', outcome: 'wrong-code' }
        // Atomic in the database every instance shares: a code's step is taken once.
        return await store.claimStep(account.id, step) ? { kind: 'accepted', via: 'totp' } : { kind: 'refused', outcome: 'reused-code' }
      }
      const recovery = canonicalRecoveryCode(otp)
      if (recovery === undefined) return { kind: 'refused', outcome: 'wrong-code' }
      const remaining = await store.useRecoveryCode(account.id, hashRecoveryCode(recovery))
      if (remaining === undefined) return { kind: 'refused', outcome: 'wrong-code' }
      record(account, actor, 'totp.recovery_used', `remaining-${remaining}`)
      return { kind: 'accepted', via: 'recovery', remaining }
    },

    async isActive (accountId) {
      return (await store.find(accountId))?.active === true
    },

    async begin (account, actor) {
      const ring = await keys()
      const secret = randomBytes(TOTP_SECRET_BYTES)
      const recoveryCodes = Array.from({ length: RECOVERY_CODE_COUNT }, generateRecoveryCode)
      const begun = await store.begin(account.id, sealSecret(ring.current, secret, account.id), recoveryCodes.map((code) => hashRecoveryCode(code.replace(/-/g, ''))))
      if (!begun) throw conflict()
      record(account, actor, 'totp.enrolled', 'pending')
      const base32 = base32Encode(secret)
      return { secret: base32, otpauthUri: otpauthUri(base32, issuer, account.username), recoveryCodes }
    },

    async confirm (account, code, actor) {
      const factor = await store.find(account.id)
      if (factor === null) throw badRequest(reasons.totpNotPending())
      if (factor.active) throw conflict()
      const secret = await secretOf(account.id, factor.sealed)
      const step = secret === undefined ? undefined : matchingStep(secret, normalizedCode(code), now())
      if (step === undefined || !await store.confirm(account.id, step)) throw badRequest(reasons.codeNotMatching())
      record(account, actor, 'totp.enabled', 'confirmed' satisfies OutcomeOf<'totp.enabled'>)
    },

    async remove (account, actor, outcome) {
      const removed = await store.remove(account.id)
      if (removed) record(account, actor, 'totp.disabled', outcome satisfies OutcomeOf<'totp.disabled'>)
      return removed
    }
  }
}
