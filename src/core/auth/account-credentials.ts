import type { HashCaller, PasswordHasher } from '../../passwords/hasher.js'
import { usernameProblem } from '../credentials.js'
import { canonicalUsername } from '../usernames.js'
import type { UserRecord, UserStore } from '../stores/user-store.js'
import type { AccountDirectory } from '../ports.js'

/**
 * Which account a username and password open, if any: the account's own hash, or the directory's
 * bind for a federated one. The same work on every path (a verify, real or dummy), so timing
 * tells nothing. Counting and limits are the caller's (password-check.ts).
 */

export interface CredentialCheckDeps {
  users: UserStore
  hasher: PasswordHasher
  /** Whether a directory user's first Login makes their account (AUTH_LDAP_AUTO_PROVISION). */
  config: { readonly ldapAutoProvision?: boolean | undefined }
  /** Absent: federation off (federated accounts use a local hash). */
  directory?: AccountDirectory | undefined
}

export type CredentialCheck =
  /** `directoryGroups`: the directory's groups for this person, set only for a Login through the directory. */
  | { ok: true, account: UserRecord, directoryGroups?: readonly string[] }
  | { ok: false, outcome: 'unknown-user' | 'wrong-password' | 'disabled' | 'not-provisioned', account?: UserRecord }

/** Checks a username and password; failures are values (their audit outcome), errors only for a backend. */
export type CheckCredentials = (username: string, password: string, caller: HashCaller) => Promise<CredentialCheck>

export function createCredentialCheck ({ users, hasher, config, directory }: CredentialCheckDeps): CheckCredentials {
  /** A directory user's first login, when provisioning is on; a concurrent first login may have made it already. */
  async function provision (username: string): Promise<UserRecord> {
    try {
      return await users.create({ username, passwordHash: null, federated: true })
    } catch (error) {
      const existing = await users.findByUsername(username)
      if (existing === null) throw error
      return existing
    }
  }

  /**
   * Through the directory: a federated account, or (directory on) a name with no account.
   * A dummy hash runs beside the bind, so every attempt costs at least one argon2 verify,
   * as local accounts do. The account is the one the directory names (its uid, read back
   * after the bind), not the one typed: a directory that matches `CAROL` or `carol ` to
   * carol's entry leads to carol's account, disabled or locked as it is.
   */
  async function checkWithDirectory (dir: AccountDirectory, username: string, password: string, typed: UserRecord | null, caller: HashCaller): Promise<CredentialCheck> {
    const [found] = await Promise.all([dir.identify(username, password), hasher.verifyDummy(password, caller)])
    if (found === null) return typed === null ? { ok: false, outcome: 'unknown-user' } : { ok: false, outcome: 'wrong-password', account: typed }
    const identity = canonicalUsername(found.username)
    // A directory name that cannot be a username here (a space, an invisible character): nobody.
    if (!identity.ok || usernameProblem(identity.username) !== undefined) return { ok: false, outcome: 'unknown-user' }
    let account = identity.username === username ? typed : await users.findByUsername(identity.username)
    if (account === null) {
      if (config.ldapAutoProvision !== true) return { ok: false, outcome: 'not-provisioned' }
      account = await provision(identity.username)
    }
    // The directory's name belongs to a local account: the directory cannot vouch for it.
    if (!account.federated) return { ok: false, outcome: 'unknown-user' }
    if (account.disabled) return { ok: false, outcome: 'disabled', account }
    return { ok: true, account, directoryGroups: found.groups }
  }

  async function checkCredentials (username: string, password: string, caller: HashCaller): Promise<CredentialCheck> {
    // Read first: its revocation epoch is what the token store checks when the token is written.
    const account = await users.findByUsername(username)
    if (directory !== undefined && (account === null || account.federated)) {
      return await checkWithDirectory(directory, username, password, account, caller)
    }
    if (account === null) {
      await hasher.verifyDummy(password, caller)
      return { ok: false, outcome: 'unknown-user' }
    }
    const hash = account.passwordHash
    if (hash === null || account.kind === 'service') {
      // A directory-only account while no directory is configured, or a service account (API
      // keys only): it cannot log in, and is answered as a wrong password, after the same verify.
      await hasher.verifyDummy(password, caller)
      return { ok: false, outcome: 'wrong-password', account }
    }
    if (!await hasher.verify(hash, password, caller)) return { ok: false, outcome: 'wrong-password', account }
    if (account.disabled) return { ok: false, outcome: 'disabled', account }
    if (hasher.needsRehash(hash)) {
      // Best effort: a failed upgrade must not fail a correct login.
      // The same password: the account's tokens and epoch stay (a new password would end them).
      await hasher.hash(password, caller).then(async (newHash) => { await users.upgradePasswordHash(account.username, hash, newHash) }).catch(() => {})
    }
    return { ok: true, account }
  }

  return checkCredentials
}
