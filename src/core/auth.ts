import type { Config } from '../config/config.js'
import type { HashCaller, PasswordHasher } from '../passwords/hasher.js'
import { badRequest, loginFailed, secondFactorRequired, SignInEnded, StatusError, tooManyRequests, unauthorized, UnavailableError } from '../errors/status.js'
import { reasons } from '../errors/reasons.js'
import { checkedPassword, checkedUsername, usernameProblem } from './credentials.js'
import { DEFAULT_PASSWORD_POLICY, passwordRefusal, type PasswordPolicy } from '../passwords/policy.js'
import type { SessionRecorder } from '../sessions/sessions.js'
import { canonicalUsername } from './usernames.js'
import { expiryInstant } from './time.js'
import { generateToken, hashToken, isTokenShaped } from '@auth-token-service/protocol/token'
import type { Directory } from '../federation/ldap-directory.js'
import type { AuditLog } from './stores/audit-log.js'
import type { LoginLimiter } from './stores/login-limiter.js'
import { RevocationIncomplete, type TokenStore } from './stores/token-store.js'
import type { TokenRecord } from '@auth-token-service/protocol/layout'
import type { ApiKeys } from '../api-keys/api-keys.js'
import { hashApiKey, isApiKeyShaped } from './api-key-secret.js'
import type { UserRecord, UserStore } from './stores/user-store.js'
import type { SecondFactor } from '../totp/second-factor.js'
import { deviceOf, type DeviceRecord } from '../webhooks/devices.js'
import type { OutcomeOf } from './events.js'

/**
 * Login, Authenticate and Logout over the stores. No HTTP here: failures are
 * StatusError values (701, 429, 403, 400, 503) that the routes turn into answers.
 */

/** Who is asking, for the brute-force limits and the audit trail. */
export interface ClientContext {
  ip: string
  userAgent?: string | undefined
  /** The admin credential acting for the account (the admin API); absent for the account's own requests. */
  credential?: string | undefined
}

export interface LoginRequest {
  username: string
  password: string
  /** A token the caller already holds (cookie or `token` parameter): refreshed when it is theirs. */
  presentedToken?: string | undefined
  /**
   * The second factor: a TOTP code or a recovery code. Needed only by an account with
   * an active factor: without it the right password gets 702, a wrong one 701 (counted).
   */
  otp?: string | undefined
  client: ClientContext
}

export interface SecondFactorRemoval {
  /** The caller's token, as Authenticate takes it. */
  token: string | undefined
  currentPassword: string
  /** A code of the factor, or a recovery code. */
  code: string | undefined
  client: ClientContext
}

/**
 * A Login proved otherwise than by a password typed now: a passkey, or the second step of a
 * sign-in whose password was right (the account held server-side, never the password). The same
 * limits, counting, lifetime and audit as Login.
 */
export interface ProvenLoginRequest {
  /** The account the proof is for, by id and canonical name (a passkey's owner; the account of the first step). */
  accountId: string
  username: string
  /** How it was proved, for the audit trail's outcome: `issued-by-passkey`. */
  method: 'passkey' | 'second-factor'
  /** Checks the proof against the account as read now; false is a failed Login, counted. */
  prove (account: UserRecord): Promise<boolean>
  /**
   * The account's revocation epoch when the proof began (the code step: as read with the right
   * password). A password change, revoke-all or disable since has raised it: the sign-in ends
   * (SignInEnded), before the proof is checked and without counting a failure.
   */
  tokenEpoch?: number | undefined
  presentedToken?: string | undefined
  client: ClientContext
}

export interface IssuedToken {
  token: string
  /** Epoch milliseconds, a whole second: what `expiration_date` names. */
  expiresAt: number
  refreshed: boolean
  account: UserRecord
}

export interface PasswordChangeRequest {
  /** The caller's token, as Authenticate takes it. */
  token: string | undefined
  currentPassword: string
  newPassword: string
  client: ClientContext
}

export interface StepUpRequest {
  /** The caller's token, as Authenticate takes it. */
  token: string | undefined
  currentPassword: string
  client: ClientContext
}

/** A federated account's password is the directory's to change (403). */
export const federatedPassword = (): StatusError =>
  new StatusError(403, 'Forbidden', 403, {}, { detail: reasons.federatedPassword() })

export interface AuthService {
  /**
   * Login: every pathway's (query, form, JSON, path style; the browser sign-in page's too). The
   * password (or the directory's bind), then, for an account with an active second factor, its
   * `otp`: absent, a 702 StatusError (secondFactorRequired, HTTP 401); wrong, reused or expired,
   * a 701 counted toward the lockout. The token, or the StatusError to answer with.
   */
  login (request: LoginRequest): Promise<IssuedToken>
  /** A Login by another proof than a password (ProvenLoginRequest). */
  loginProven (request: ProvenLoginRequest): Promise<IssuedToken>
  /**
   * The caller's own password: the current one checked as a Login checks it (the same limits,
   * counting and lockout, the same verify), the new one against the policy. Every other token of
   * the account ends; the caller's stays. Returns how many ended.
   */
  changePassword (request: PasswordChangeRequest): Promise<{ ended: number }>
  /**
   * The caller's own second factor removed (DELETE /auth/totp): the current password and a code,
   * each checked as Login checks them (a wrong one is a 701 counted toward the lockout).
   */
  removeSecondFactor (request: SecondFactorRemoval): Promise<void>
  /**
   * The caller proves again that they know the password, for what outlives their token (an API
   * key, a second factor, a passkey): a stolen token alone must not buy any of them. The current
   * password is checked as Login checks it (the same limits, counting and lockout; a federated
   * account's through the directory), without the second factor the token already stands for.
   * The token's account as read now, or the error: 400, 403, 701, 429, 503.
   */
  stepUp (request: StepUpRequest): Promise<UserRecord>
  /** The active Login token's record; fails with 403 for anything else (an API key too). Never writes. */
  authenticate (token: string | undefined): Promise<TokenRecord>
  /**
   * What Authenticate, /auth/verify and /auth/introspect accept: a Login token or an API key.
   * A key's record carries its `keyId`. Writes nothing on the answer's path.
   * `client` (its `ip` read only for a key the token store does not hold: the Fastify request
   * will do, its ip computed only then) is whose budget of key look-ups a lost record spends.
   */
  authenticateCredential (token: string | undefined, client?: { readonly ip: string }): Promise<TokenRecord>
  /** Ends an active token; fails with 403 when it was not active (or another caller ended it first). */
  logout (token: string | undefined, client: ClientContext): Promise<void>
}

export interface AuthServiceDeps {
  users: UserStore
  tokens: TokenStore
  hasher: PasswordHasher
  limiter: LoginLimiter
  audit: AuditLog
  config: Pick<Config, 'tokenTtlSeconds' | 'federatedTokenTtlSeconds'> & Partial<Pick<Config, 'ldapAutoProvision'>>
  /** The directory federated accounts log in through; absent: federation off (federated accounts use a local hash). */
  directory?: Directory | undefined
  /** Where Login records each token's session; absent: none recorded. */
  sessions?: SessionRecorder | undefined
  /** What a new password must be (POST /auth/Password); NIST SP 800-63B's defaults when absent. */
  passwordPolicy?: PasswordPolicy | undefined
  /** API keys: absent, an `atsk_` secret is refused as any unknown token. */
  apiKeys?: Pick<ApiKeys, 'recover' | 'used'> | undefined
  /** TOTP: absent, no account has a second factor. */
  secondFactor?: Pick<SecondFactor, 'verify' | 'remove'> | undefined
  /** The clients each account logged in from (login.new_device, webhooks on); absent: not tracked. */
  devices?: DeviceRecord | undefined
  /** Wall clock in epoch ms; injectable for tests. */
  now?: () => number
}

const activeOrRefused = (record: TokenRecord | null): TokenRecord => {
  // A key's record is never a Login token's (the hashes of the two shapes never meet; this says so).
  if (record === null || record.keyId !== undefined) throw unauthorized()
  return record
}

export function lifetimeSeconds (config: AuthServiceDeps['config'], federated: boolean): number {
  return federated ? config.federatedTokenTtlSeconds : config.tokenTtlSeconds
}

type CredentialCheck =
  | { ok: true, account: UserRecord }
  | { ok: false, outcome: 'unknown-user' | 'wrong-password' | 'disabled' | 'not-provisioned', account?: UserRecord }

export function createAuthService (deps: AuthServiceDeps): AuthService {
  const { users, tokens, hasher, limiter, audit, config, directory, sessions, apiKeys, secondFactor, devices } = deps
  const activeKey = (record: TokenRecord | null): TokenRecord => {
    if (record?.keyId === undefined) throw unauthorized()
    apiKeys?.used(record.keyId)
    return record
  }
  const passwordPolicy = deps.passwordPolicy ?? DEFAULT_PASSWORD_POLICY
  const now = deps.now ?? Date.now

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
  async function checkWithDirectory (dir: Directory, username: string, password: string, typed: UserRecord | null, caller: HashCaller): Promise<CredentialCheck> {
    const [uid] = await Promise.all([dir.identify(username, password), hasher.verifyDummy(password, caller)])
    if (uid === null) return typed === null ? { ok: false, outcome: 'unknown-user' } : { ok: false, outcome: 'wrong-password', account: typed }
    const identity = canonicalUsername(uid)
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
    return { ok: true, account }
  }

  /** The same work on every path (a verify, real or dummy), so timing tells nothing. */
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

  /**
   * The token, or undefined when a revocation of the account overtook this Login: the epoch
   * read with the account, before its password was checked, is older than the one the
   * revocation recorded beside the account's tokens, and the store issued nothing.
   */
  async function issue (account: UserRecord, presentedToken: string | undefined, client: ClientContext): Promise<IssuedToken | undefined> {
    const issuedAt = now()
    const expiresAt = expiryInstant(issuedAt, lifetimeSeconds(config, account.federated))
    // Relative to the instant the date was computed from (PX): Redis's clock cannot change it.
    const ttlMs = expiresAt - issuedAt
    const record: TokenRecord = { accountId: account.id, username: account.username, federated: account.federated, expiresAt }
    const session = (tokenHash: string) => ({ tokenHash, accountId: account.id, created: issuedAt, expiresAt, client, federated: account.federated })
    if (presentedToken !== undefined && isTokenShaped(presentedToken)) {
      const presentedHash = hashToken(presentedToken)
      if (await tokens.refresh(presentedHash, record, ttlMs, account.tokenEpoch)) {
        // The token's life is already reset: a session row that lags says less, it decides nothing.
        await sessions?.refreshed(session(presentedHash)).catch(() => {})
        return { token: presentedToken, expiresAt, refreshed: true, account }
      }
    }
    const token = generateToken(account.id)
    const tokenHash = hashToken(token)
    if (!await tokens.issue(tokenHash, record, ttlMs, account.tokenEpoch)) return undefined
    if (sessions !== undefined) {
      try {
        await sessions.started(session(tokenHash))
      } catch (error) {
        // No token without its session (one nobody could see or end by id): unsaid, and the 503.
        await tokens.terminate(tokenHash).catch(() => {})
        throw error
      }
    }
    return { token, expiresAt, refreshed: false, account }
  }

  /**
   * A revocation overtook this Login: no token, and the answer the account's state now
   * dictates. Disabled, gone or given another password since: 701, as a Login started now
   * would get. Unchanged (a revoke-all): 503 with Retry-After, since the credentials were
   * right but a Login begun before the revocation must not outlive it; a new Login succeeds.
   * Postgres unreachable: its 503, as ever.
   */
  async function refuseOvertaken (account: UserRecord, context: { username: string, clientIp: string, userAgent: string | undefined }): Promise<never> {
    audit.record({ event: 'login.refused', ...context, accountId: account.id, outcome: 'revoked-during-login' })
    const current = await users.findByUsername(account.username)
    if (current === null || current.disabled || current.passwordHash !== account.passwordHash || current.federated !== account.federated) throw loginFailed()
    throw new UnavailableError('revoked', undefined, { 'retry-after': '1' })
  }

  /**
   * Login's check of a username and password, with everything around it: the limits (read-only
   * while locked), one verify whatever the outcome, failures counted and audited, a success
   * settled against failures sent alongside. The account, or the error a Login would answer.
   * POST /auth/Password checks the current password through this too.
   */
  async function checkPassword (username: string, password: string, client: ClientContext, factor?: { otp: string | undefined }): Promise<UserRecord> {
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
    }
    await settled(username, client, checked.account)
    return checked.account
  }

  /** A failed attempt, counted against the account and the address and audited; always throws (701, or 429 once locked). */
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

  /** A success settled against failures sent alongside: a right guess among parallel wrong ones that locked the account first is refused like them. */
  async function settled (username: string, client: ClientContext, account: UserRecord): Promise<void> {
    const verdict = await limiter.recordSuccess(username)
    if (!verdict.allowed) {
      audit.record({ event: 'login.refused', username, clientIp: client.ip, userAgent: client.userAgent, accountId: account.id, outcome: verdict.reason })
      throw tooManyRequests(verdict.retryAfterMs / 1000)
    }
  }

  /** Read-only: an attempt while locked neither runs a check nor extends the lock. */
  async function allowed (username: string, client: ClientContext): Promise<void> {
    const verdict = await limiter.check(username, client.ip)
    if (!verdict.allowed) {
      audit.record({ event: 'login.refused', username, clientIp: client.ip, userAgent: client.userAgent, outcome: verdict.reason })
      throw tooManyRequests(verdict.retryAfterMs / 1000)
    }
  }

  /** The token for an account whose credentials held, audited as a Login. */
  async function signIn (account: UserRecord, username: string, presentedToken: string | undefined, client: ClientContext, how: '' | `-by-${ProvenLoginRequest['method']}`): Promise<IssuedToken> {
    const context = { username, clientIp: client.ip, userAgent: client.userAgent }
    const issued = await issue(account, presentedToken, client) ?? await refuseOvertaken(account, context)
    // Best effort and off the answer's path: the admin API's last_login must never fail or slow a Login.
    users.recordLogin(account.id).catch(() => {})
    audit.record({ event: 'login.success', ...context, accountId: account.id, outcome: `${issued.refreshed ? 'refreshed' : 'issued'}${how}` satisfies OutcomeOf<'login.success'> })
    if (devices !== undefined) {
      // Off the answer's path, as last_login: a record that cannot be written costs an alert, never a Login.
      const device = deviceOf(client.ip, client.userAgent)
      devices.seen(account.id, device).then((unseen) => {
        if (unseen) audit.record({ event: 'login.new_device', ...context, accountId: account.id, outcome: 'new-device' satisfies OutcomeOf<'login.new_device'>, device })
      }, () => {})
    }
    return issued
  }

  // The hot path: the store's own promise, chained, rather than another async frame around it.
  function authenticateToken (token: string | undefined): Promise<TokenRecord> {
    if (token === undefined || !isTokenShaped(token)) return Promise.reject(unauthorized())
    return tokens.find(hashToken(token)).then(activeOrRefused)
  }

  return {
    async login (request) {
      // Refused before any hashing or counting: a megabyte password must not cost a hash.
      const username = checkedUsername(request.username)
      const password = checkedPassword(request.password)
      const { client } = request
      const account = await checkPassword(username, password, client, { otp: request.otp })
      return await signIn(account, username, request.presentedToken, client, '')
    },

    async loginProven (request) {
      const { username, client } = request
      await allowed(username, client)
      const account = await users.findByUsername(username)
      if (account !== null && account.id === request.accountId && request.tokenEpoch !== undefined && account.tokenEpoch !== request.tokenEpoch) {
        // The token is issued on this same read's epoch: a revocation after it is refused by the token store.
        audit.record({ event: 'login.refused', username, clientIp: client.ip, userAgent: client.userAgent, accountId: account.id, outcome: 'sign-in-ended' })
        throw new SignInEnded()
      }
      // The account as it is now: gone, made again under the name, disabled, or a service account: no sign-in.
      const usable = account !== null && account.id === request.accountId && !account.disabled && account.kind !== 'service'
      if (!usable || !await request.prove(account)) {
        return await failed(username, client, account?.id, usable ? `wrong-${request.method}` : 'unusable-account')
      }
      await settled(username, client, account)
      return await signIn(account, username, request.presentedToken, client, `-by-${request.method}`)
    },

    async changePassword ({ token, currentPassword, newPassword, client }) {
      // Both refused before any hashing or counting, as Login refuses a megabyte password.
      const current = checkedPassword(currentPassword, 'current_password')
      const next = checkedPassword(newPassword, 'new_password')
      if (token === undefined || !isTokenShaped(token)) throw unauthorized()
      const tokenHash = hashToken(token)
      const holder = activeOrRefused(await tokens.find(tokenHash))
      if (holder.federated) throw federatedPassword()
      const account = await checkPassword(holder.username, current, client)
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
      const account = await checkPassword(holder.username, current, client, { otp: code })
      if (account.id !== holder.accountId) throw unauthorized()
      if (secondFactor === undefined || !await secondFactor.remove(account, { clientIp: client.ip, userAgent: client.userAgent }, 'removed')) {
        throw badRequest(reasons.totpNotActive())
      }
    },

    async stepUp ({ token, currentPassword, client }) {
      // Refused before any hashing or counting, as Login refuses a megabyte password.
      const current = checkedPassword(currentPassword, 'current_password')
      const holder = await authenticateToken(token)
      const account = await checkPassword(holder.username, current, client)
      // The name now belongs to another account than the token's (deleted and made again): not yours.
      if (account.id !== holder.accountId) throw unauthorized()
      return account
    },

    authenticate: authenticateToken,

    authenticateCredential (token, client) {
      if (token === undefined || apiKeys === undefined || !isApiKeyShaped(token)) return authenticateToken(token)
      const keyHash = hashApiKey(token)
      return tokens.find(keyHash)
        .then((record) => record ?? apiKeys.recover(keyHash, client?.ip ?? ''))
        .then(activeKey)
    },

    async logout (token, client) {
      if (token === undefined || !isTokenShaped(token)) throw unauthorized()
      const tokenHash = hashToken(token)
      const ended = await tokens.terminate(tokenHash)
      if (ended === null) throw unauthorized()
      // Not awaited: Logout works while Postgres is away (the row is never listed once its token is gone).
      sessions?.ended([tokenHash]).catch(() => {})
      audit.record({
        event: 'logout',
        username: ended.username,
        accountId: ended.accountId,
        clientIp: client.ip,
        userAgent: client.userAgent,
        outcome: 'terminated' satisfies OutcomeOf<'logout'>,
        tokensEnded: 1
      })
    }
  }
}
