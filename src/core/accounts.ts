import type { PasswordHasher } from '../passwords/hasher.js'
import { DEFAULT_PASSWORD_POLICY, passwordRefusal, type PasswordPolicy } from '../passwords/policy.js'
import { reasons } from '../errors/reasons.js'
import { badRequest, StatusError } from '../errors/status.js'
import { checkedPassword, checkedUsername } from './credentials.js'
import type { AuditLog } from './stores/audit-log.js'
import type { LoginLimiter } from './stores/login-limiter.js'
import { RevocationIncomplete, type TokenStore } from './stores/token-store.js'
import { duplicateUsername, type AccountDetails, type AccountKind, type UserRecord, type UserStore } from './stores/user-store.js'
import type { AccountKeys, InvitationSender, SecondFactorReset } from './ports.js'
import { checkedEmail } from './email-addresses.js'
import type { OutcomeOf } from './events.js'
import { createGroupChanges, type AccountKeyHashes } from './groups.js'
import { isGroupName } from './group-names.js'
import type { GroupCount, GroupStore } from './stores/group-store.js'

/**
 * Account administration shared by the command line and the start-up bootstrap.
 * Anything that takes an account's right away (disable, new password) ends its tokens.
 */

export const unknownUser = (): StatusError => new StatusError(404, 'Unknown User', 404)
/** A group no account is in: groups exist only through their members. */
export const unknownGroup = (): StatusError => new StatusError(404, 'Not Found', 404, undefined, { detail: reasons.unknownGroup() })

/** An account as the admin API and `user list` show it: its details and its brute-force lock. */
export interface AccountView extends AccountDetails {
  /** Until when failed logins lock it; null when it is not locked. */
  lockedUntil: Date | null
}

export interface AccountPage {
  accounts: AccountView[]
  /** The last username of this page when more may follow (the next page starts after it). */
  next: string | undefined
}

/** A new account as the admin API and the console ask for one. */
export interface NewAccount {
  username: string
  /** Absent: a federated account, a service account, or an invitation's. */
  password?: string | undefined
  federated?: boolean | undefined
  kind?: AccountKind | undefined
  /** Its address for recovery mail; checked before anything is made. */
  email?: string | undefined
  /** Instead of a password, a link mailed to `email` to set the first one (invite). */
  invite?: boolean | undefined
}

export interface AccountAdmin {
  /**
   * Makes the account (add, then its address), or, with `invite`, invites it (a person's local
   * account, an address, no password; 400 otherwise). A bad address makes nothing.
   */
  create (account: NewAccount): Promise<AccountView>
  /**
   * No password: a federated account only the directory can check, or a service account (kind
   * 'service'), which has none and authenticates with API keys only.
   */
  add (username: string, password: string | undefined, federated: boolean, kind?: AccountKind): Promise<UserRecord>
  setPassword (username: string, password: string): Promise<{ account: UserRecord, ended: number }>
  setDisabled (username: string, disabled: boolean): Promise<{ account: UserRecord, ended: number }>
  list (): Promise<UserRecord[]>
  /** Up to `limit` accounts after the username `after`, in username order; with `prefix`, those whose usernames begin with it. */
  page (after: string | undefined, limit: number, prefix?: string): Promise<AccountPage>
  show (username: string): Promise<AccountView>
  /** Lifts the brute-force lock (and its doubling level) of the account. */
  unlock (username: string): Promise<AccountView>
  /** Removes the account and ends its tokens; its audit rows stay. */
  remove (username: string): Promise<{ account: UserRecord, ended: number }>
  revokeSessions (username: string): Promise<{ account: UserRecord, ended: number }>
  /** Removes the account's second factor (a lost phone and no recovery code): it logs in with its password alone until it enrolls again. */
  resetSecondFactor (username: string): Promise<AccountView>
  /**
   * Makes `groups` the account's whole set of local groups (a federated account's directory groups
   * stand beside them); its live tokens carry the change at once (core/groups.ts). 400 for a bad name.
   */
  setGroups (username: string, groups: readonly string[]): Promise<AccountView>
  /** Every group with a member, by name, with its number of members. */
  groups (): Promise<GroupCount[]>
  /** The account's address for recovery mail; null removes it (400 for one that is not an address). */
  setEmail (username: string, email: string | null): Promise<AccountView>
  /**
   * A person's local account without a password, with `email`, and an invitation link sent there
   * to set the first one (7 days). An account of that name that never got a password (an earlier
   * invitation ran out) is invited again; any other is taken (409). 400 while mail is off.
   */
  invite (username: string, email: string): Promise<AccountView>
  /** Up to `limit` usernames of the group's members after `after`, in username order; 404 for a group with none. */
  groupMembers (group: string, after: string | undefined, limit: number): Promise<{ members: string[], next: string | undefined }>
  /**
   * The bootstrap account: created when missing, otherwise left as it is (its password may
   * have been changed since); with `reset`, given this password again, which ends its tokens.
   */
  ensure (username: string, password: string, options?: { reset?: boolean }): Promise<EnsureResult>
}

/**
 * Who makes an account change, for its audit event: the admin API's caller (address, user agent,
 * the credential it presented), or the command line working on the database itself.
 */
export interface AdminActor {
  clientIp?: string | undefined
  userAgent: string | undefined
  /** `key:<fingerprint>` (admin/admin-key.ts), `local-cli`; never a key. */
  credential?: string | undefined
  /** The signed-in account acting from the admin console (its username); absent for the admin API and the command line. */
  actor?: string | undefined
}

/**
 * How the audit trail names the command line on this host: with the database open itself (the
 * embedded one while the service is stopped, or DATABASE_URL), or through the running service's
 * admin API with the key it generated (a new one each start, so no fingerprint would mean anything).
 */
export const LOCAL_CLI_CREDENTIAL = 'local-cli'

/** The command line with the database open itself. */
export const LOCAL_CLI_ACTOR: AdminActor = Object.freeze({ userAgent: 'cli', credential: LOCAL_CLI_CREDENTIAL })

export type EnsureResult =
  | { outcome: 'created' | 'exists', account: UserRecord }
  | { outcome: 'reset', account: UserRecord, ended: number }

export interface AccountAdminDeps {
  users: UserStore
  tokens: TokenStore
  hasher: PasswordHasher
  audit: AuditLog
  /** Where failed logins lock accounts (keyed on the account's username, as Login keys them). */
  limiter: LoginLimiter
  /** Wall clock in epoch ms, for `lockedUntil`. */
  now?: () => number
  /** Who makes the changes, for the audit trail (the admin API's caller, the command line, the bootstrap). */
  actor?: AdminActor
  /** What a new password must be (passwords/policy.ts); NIST SP 800-63B's defaults when absent. */
  passwordPolicy?: PasswordPolicy
  /** The accounts' API keys: disabling, revoke-all and delete end them (a new password does not). */
  apiKeys?: AccountKeys | undefined
  /** Second factors, for the reset; absent, an account has none to reset. */
  totp?: SecondFactorReset | undefined
  /** Group membership: its reads, and its changes (which reach the live tokens). */
  groupStore: GroupStore
  /** The account's live API keys by hash, for their records to carry a change of groups. */
  keyHashes?: AccountKeyHashes | undefined
  /** Invitation mail (src/recovery); absent while mail is off. */
  invitations?: InvitationSender | undefined
}

type AdminEvent = 'user.add' | 'user.passwd' | 'user.disable' | 'user.enable' | 'sessions.revoke' | 'user.unlock' | 'user.delete' | 'user.email' | 'user.invite'

/** Setting an account's address and inviting one (src/recovery sends the mail through the InvitationSender port). */
function emailAdmin ({ users, invitations, audit, by, view, details, record }: Pick<AccountAdminDeps, 'users' | 'invitations' | 'audit'> & {
  by: AdminActor
  view: (account: AccountDetails) => Promise<AccountView>
  details: (username: string) => Promise<AccountDetails>
  record: (event: 'user.add' | 'user.invite', account: UserRecord, ended: number) => void
}): Pick<AccountAdmin, 'setEmail' | 'invite'> {
  return {
    async setEmail (username, email) {
      const checked = email === null ? null : checkedEmail(email)
      const before = await details(username)
      const account = await users.setEmail(before.username, checked)
      if (account === null) throw unknownUser()
      if (before.email !== checked) await invitations?.addressChanged(account)
      // The trail says that the address changed, never the address.
      audit.record({ event: 'user.email', username: account.username, accountId: account.id, ...by, outcome: checked === null ? 'removed' : 'set' })
      return await view(await details(account.username))
    },
    async invite (username, email) {
      const name = checkedUsername(username)
      const address = checkedEmail(email)
      if (invitations === undefined) throw badRequest(reasons.mailOff())
      let account = await users.findByUsername(name)
      if (account === null) {
        account = await users.create({ username: name, passwordHash: null, federated: false, kind: 'person' })
        record('user.add', account, 0)
      } else if (account.passwordHash !== null || account.federated || account.kind !== 'person') {
        throw duplicateUsername()
      }
      if (account.disabled) throw badRequest(reasons.notInvitable())
      const withEmail = await users.setEmail(account.username, address)
      if (withEmail === null) throw unknownUser()
      await invitations.invite(withEmail, address, by)
      record('user.invite', withEmail, 0)
      return await view(await details(withEmail.username))
    }
  }
}

/** AccountAdmin.create: an invitation, or an account and then its address. */
async function createAccount (admin: Pick<AccountAdmin, 'invite' | 'add' | 'show' | 'setEmail'>, { username, password, federated = false, kind = 'person', email, invite = false }: NewAccount): Promise<AccountView> {
  if (invite) {
    if (password !== undefined || federated || kind !== 'person') throw badRequest(reasons.inviteWithPassword())
    if (email === undefined) throw badRequest(reasons.adminParameterRequired('email'))
    return await admin.invite(username, email)
  }
  if (email !== undefined) checkedEmail(email)
  const account = await admin.add(username, password, federated, kind)
  return email === undefined ? await admin.show(account.username) : await admin.setEmail(account.username, email)
}

export function createAccountAdmin ({ users, tokens, hasher, audit, limiter, now = Date.now, actor = { userAgent: 'admin' }, passwordPolicy = DEFAULT_PASSWORD_POLICY, apiKeys, totp, groupStore, keyHashes, invitations }: AccountAdminDeps): AccountAdmin {
  const groupChanges = createGroupChanges({ store: groupStore, tokens, audit, keys: keyHashes })
  const by = { clientIp: actor.clientIp, userAgent: actor.userAgent, credential: actor.credential, actor: actor.actor }
  const outcomes: Partial<Record<AdminEvent, string>> = { 'user.add': 'created', 'user.unlock': 'unlocked', 'user.invite': 'invited' }
  const record = (event: AdminEvent, account: UserRecord, ended: number): void => {
    audit.record({ event, username: account.username, accountId: account.id, ...by, outcome: outcomes[event] ?? `tokens-ended-${ended}` satisfies OutcomeOf<'account.revoked' | 'account.disabled' | 'account.enabled' | 'password.changed'>, tokensEnded: ended })
  }
  const view = async (account: AccountDetails): Promise<AccountView> => {
    const lockedMs = await limiter.lockedForMs(account.username)
    return { ...account, lockedUntil: lockedMs > 0 ? new Date(now() + lockedMs) : null }
  }
  const details = async (username: string): Promise<AccountDetails> => {
    const account = await users.details(checkedUsername(username))
    if (account === null) throw unknownUser()
    return account
  }
  /** A password this service is asked to set: the limits of any password, then the policy's. */
  const validPassword = async (raw: string, username: string): Promise<string> => {
    const password = checkedPassword(raw)
    const refusal = await passwordRefusal(password, username, passwordPolicy)
    if (refusal !== undefined) throw badRequest(refusal)
    return password
  }
  const existing = async (username: string): Promise<UserRecord> => {
    const account = await users.findByUsername(checkedUsername(username))
    if (account === null) throw unknownUser()
    return account
  }
  /**
   * The account as its revoking UPDATE returned it: its epoch goes beside its tokens as they
   * end. A revoke-all that Redis cut short is recorded as far as it went, then reported.
   */
  const endTokens = async (event: 'user.passwd' | 'user.disable' | 'sessions.revoke' | 'user.delete', account: UserRecord): Promise<number> => {
    try {
      return (await tokens.terminateAccount(account.id, account.tokenEpoch)).length
    } catch (error) {
      if (error instanceof RevocationIncomplete) {
        audit.record({ event, username: account.username, accountId: account.id, ...by, outcome: `tokens-ended-${error.ended}-incomplete` satisfies OutcomeOf<'account.revoked' | 'account.disabled' | 'password.changed'>, tokensEnded: error.ended })
      }
      throw error
    }
  }

  const admin: AccountAdmin = {
    create: async (account) => await createAccount(admin, account),
    async add (username, password, federated, kind = 'person') {
      const name = checkedUsername(username)
      if (kind === 'service') {
        if (password !== undefined) throw badRequest(reasons.serviceAccountPassword())
        if (federated) throw badRequest(reasons.serviceAccountFederated())
      } else if (password === undefined && !federated) throw badRequest(reasons.required('password'))
      const passwordHash = password === undefined ? null : await hasher.hash(await validPassword(password, name))
      const account = await users.create({ username: name, passwordHash, federated, kind })
      record('user.add', account, 0)
      return account
    },
    async setPassword (username, password) {
      const account = await existing(username)
      if (account.kind === 'service') throw badRequest(reasons.serviceAccountPassword())
      const updated = await users.setPasswordHash(account.username, await hasher.hash(await validPassword(password, account.username)))
      if (updated === null) throw unknownUser()
      const ended = await endTokens('user.passwd', updated)
      record('user.passwd', updated, ended)
      return { account: updated, ended }
    },
    async setDisabled (username, disabled) {
      const account = await existing(username)
      const updated = await users.setDisabled(account.username, disabled)
      if (updated === null) throw unknownUser()
      const ended = disabled ? await endTokens('user.disable', updated) : 0
      // Postgres says ended before Redis is told (api-keys/api-keys.ts): no re-seed brings one back.
      if (disabled) await apiKeys?.endAccount(updated, by, 'account-disabled')
      record(disabled ? 'user.disable' : 'user.enable', updated, ended)
      return { account: updated, ended }
    },
    list: async () => await users.list(),
    async page (after, limit, prefix) {
      // One more than asked: whether a next page exists without a second query.
      const found = await users.page(after, limit + 1, prefix)
      const accounts = await Promise.all(found.slice(0, limit).map(view))
      return { accounts, next: found.length > limit ? accounts.at(-1)?.username : undefined }
    },
    show: async (username) => await view(await details(username)),
    async resetSecondFactor (username) {
      const account = await details(username)
      // The audit name the account's own removal has (totp/second-factor.ts), with the admin's credential.
      if (await totp?.remove(account.id) === true) audit.record({ event: 'totp.disabled', username: account.username, accountId: account.id, ...by, outcome: 'reset' satisfies OutcomeOf<'totp.disabled'> })
      return await view({ ...account, totp: false })
    },
    async setGroups (username, groups) {
      const checked = checkedUsername(username)
      const set = await groupChanges.set(checked, 'local', groups, by)
      if (set === null) throw unknownUser()
      return await view(await details(checked))
    },
    groups: async () => await groupStore.list(),
    ...emailAdmin({ users, invitations, audit, by, view, details, record }),
    async groupMembers (group, after, limit) {
      if (!isGroupName(group)) throw unknownGroup()
      // One more than asked: whether a next page exists without a second query.
      const found = await groupStore.members(group, after, limit + 1)
      if (found.length === 0 && after === undefined) throw unknownGroup()
      const members = found.slice(0, limit)
      return { members, next: found.length > limit ? members.at(-1) : undefined }
    },
    async unlock (username) {
      const account = await details(username)
      await limiter.unlock(account.username)
      record('user.unlock', account, 0)
      return await view(account)
    },
    async remove (username) {
      // Its keys end while their rows still name them (the delete cascades to the rows).
      const before = await users.findByUsername(checkedUsername(username))
      if (before !== null) await apiKeys?.endAccount(before, by, 'account-deleted')
      // The row goes first and returns its epoch raised: a Login that read it before is refused its token.
      const account = await users.remove(checkedUsername(username))
      if (account === null) throw unknownUser()
      const ended = await endTokens('user.delete', account)
      record('user.delete', account, ended)
      return { account, ended }
    },
    async revokeSessions (username) {
      const account = await users.raiseTokenEpoch((await existing(username)).username)
      if (account === null) throw unknownUser()
      const ended = await endTokens('sessions.revoke', account)
      await apiKeys?.endAccount(account, by, 'revoke-all')
      record('sessions.revoke', account, ended)
      return { account, ended }
    },
    async ensure (username, password, options = {}) {
      const name = checkedUsername(username)
      const account = await users.findByUsername(name)
      if (account === null) {
        try {
          return { outcome: 'created', account: await admin.add(name, password, false) }
        } catch (error) {
          // Instances starting together on a fresh database: another one made it first.
          if (!(error instanceof StatusError && error.status === 409)) throw error
          return await admin.ensure(name, password, options)
        }
      }
      // A restart must not undo a password change made since (compose restarts containers at will).
      if (options.reset !== true) return { outcome: 'exists', account }
      const { account: updated, ended } = await admin.setPassword(name, password)
      return { outcome: 'reset', account: updated, ended }
    }
  }
  return admin
}
