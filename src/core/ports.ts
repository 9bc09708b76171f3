import type { TokenRecord } from '@auth-token-service/protocol/layout'
import type { ClientContext } from './auth/types.js'
import type { AuditEvent } from './stores/audit-log.js'
import type { UserRecord } from './stores/user-store.js'

/**
 * What the contract's core asks of the features around it (sessions, API keys, the second factor,
 * the device record, the directory), declared here so that core imports no feature: each
 * feature's service satisfies its port by its shape, and the composition root (src/app) hands it
 * in. A port holds only the methods core calls; absent, core works without the feature.
 */

/** Who made a change, for the audit trail: an address, a user agent, an admin credential. */
export type AuditActor = Pick<AuditEvent, 'clientIp' | 'userAgent' | 'credential' | 'actor'>

/**
 * How a sign-in was made, by RFC 8176's names: a password (`pwd`), a one-time code after it
 * (`otp`: a TOTP or recovery code), a passkey (`hwk`). The OpenID Connect `amr` claim.
 */
export type SignInMethod = 'pwd' | 'otp' | 'hwk'

/** What Login tells the sessions, after the token store took the token. */
export interface NewSession {
  tokenHash: string
  accountId: string
  /** Epoch milliseconds. */
  created: number
  expiresAt: number
  client: ClientContext
  federated: boolean
  /** How this Login proved the account (a refresh: how the refreshing Login did). */
  amr: readonly SignInMethod[]
}

/** Where Login records each token's session (src/sessions). */
export interface SessionRecorder {
  /** A new token's session. */
  started (session: NewSession): Promise<void>
  /**
   * A Login refreshed the token: its session's new expiry, refreshed at `session.created`. A
   * token with no session yet (issued before sessions were kept) gets one, begun now.
   */
  refreshed (session: NewSession): Promise<void>
  /** The tokens ended (Logout, a password change): their sessions go. Never fails: a row left behind is never listed. */
  ended (tokenHashes: readonly string[]): Promise<void>
}

/** Who the directory says a person is, and the groups it puts them in, as of this Login. */
export interface DirectoryIdentity {
  /** The entry's username attribute as read back after the bind, never the name typed. */
  username: string
  /**
   * The directory's groups as group names here (group-names.ts: mapped, each once, sorted); empty
   * when the directory reads none (AUTH_LDAP_GROUP_SEARCH_MODE=none) or the person is in none.
   */
  groups: readonly string[]
}

/** The directory federated accounts log in through (src/federation). */
export interface AccountDirectory {
  /**
   * Who the directory says this is, when it accepts the password, with their groups. Null for a
   * wrong password, an unknown user, or an entry without the username attribute. 503 when it
   * cannot be asked, groups included: a Login never goes on with groups it could not read.
   */
  identify (username: string, password: string): Promise<DirectoryIdentity | null>
}

/** API keys as Authenticate meets them (src/api-keys). */
export interface ApiKeyLookup {
  /**
   * The token store holds no record for this key hash: the record re-seeded from a live row, or
   * null when there is none. Bounded per client (`client`: whose budget of look-ups it spends).
   */
  recover (keyHash: string, client: string): Promise<TokenRecord | null>
  /** A key was used (its last_used, written later). */
  used (keyId: string): void
}

/** Why every key of an account ended, for the audit trail's outcome. */
export type KeysEndedBy = 'account-disabled' | 'account-deleted' | 'revoke-all'

/** API keys as account administration ends them: disabling, revoke-all and delete end them (src/api-keys). */
export interface AccountKeys {
  /** Ends every live key of the account; returns how many it ended. */
  endAccount (account: { id: string, username: string }, actor: AuditActor, why: KeysEndedBy): Promise<number>
}

export type FactorVerdict =
  /** No active factor: the password alone decides, as ever. */
  | { kind: 'none' }
  /** An active factor and no `otp`: 702. */
  | { kind: 'missing' }
  | { kind: 'accepted', via: 'totp' }
  | { kind: 'accepted', via: 'recovery', remaining: number }
  /** 701, counted as a failed Login. */
  | { kind: 'refused', outcome: 'wrong-code' | 'reused-code' | 'secret-unreadable' }

/** The second factor as Login and its removal by the account use it (src/totp). */
export interface LoginSecondFactor {
  /** Login's check after the right password: the verdict for `otp` (a TOTP code or a recovery code). */
  verify (account: UserRecord, otp: string | undefined, actor: AuditActor): Promise<FactorVerdict>
  /** Removes the account's own factor, active or waiting; false when there was none. */
  remove (account: Pick<UserRecord, 'id' | 'username'>, actor: AuditActor, outcome: 'removed'): Promise<boolean>
}

/** The second factor as an administrator's reset removes it (src/totp). */
export interface SecondFactorReset {
  /** False when the account had none. */
  remove (accountId: string): Promise<boolean>
}

/** A client the account had not logged in from lately, as the login.new_device event carries it. */
export type NewDevice = NonNullable<AuditEvent['device']>

/** The clients each account logged in from (src/webhooks), for login.new_device. */
export interface LoginDevices {
  /**
   * Records that the account logged in from this client now: the client's device when the
   * account had not used it lately (a new device), undefined otherwise.
   */
  seen (accountId: string, ip: string, userAgent: string | undefined): Promise<NewDevice | undefined>
}

/**
 * Invitation mail (src/recovery): a link to set the first password, sent to `email`. Absent, mail
 * is off and no account can be invited.
 */
export interface InvitationSender {
  invite (account: UserRecord, email: string, actor: AuditActor): Promise<void>
  /** The account's address changed: the links mailed to the old one stop working (their unsent mail withdrawn). */
  addressChanged (account: UserRecord): Promise<void>
}
