import { loginFailed, SignInEnded, UnavailableError } from '../../errors/status.js'
import { checkedPassword, checkedUsername } from '../credentials.js'
import { expiryInstant } from '../time.js'
import { generateToken, hashToken, isTokenShaped } from '@auth-token-service/protocol/token'
import type { TokenRecord } from '@auth-token-service/protocol/layout'
import type { AuditLog } from '../stores/audit-log.js'
import type { TokenStore } from '../stores/token-store.js'
import type { UserRecord, UserStore } from '../stores/user-store.js'
import type { OutcomeOf } from '../events.js'
import type { LoginDevices, SessionRecorder, SignInMethod } from '../ports.js'
import type { PasswordCheck } from './password-check.js'
import type { AuthService, ClientContext, IssuedToken, ProvenLoginRequest } from './types.js'

/**
 * Login, by a password or by another proof: past the gate (password-check.ts), the token issued
 * (or the one presented refreshed) on the account's revocation epoch as read before the check,
 * its session recorded, and the Login audited.
 */

/** How long a token lives (AUTH_TOKEN_TTL_SECONDS, AUTH_FEDERATED_TOKEN_TTL_SECONDS). */
export interface TokenLifetimes {
  readonly tokenTtlSeconds: number
  readonly federatedTokenTtlSeconds: number
}

export function lifetimeSeconds (config: TokenLifetimes, federated: boolean): number {
  return federated ? config.federatedTokenTtlSeconds : config.tokenTtlSeconds
}

export interface LoginDeps {
  users: UserStore
  tokens: TokenStore
  audit: AuditLog
  config: TokenLifetimes
  gate: PasswordCheck
  /** Where Login records each token's session; absent: none recorded. */
  sessions?: SessionRecorder | undefined
  /** The clients each account logged in from (login.new_device); absent: not tracked. */
  devices?: LoginDevices | undefined
  /** Wall clock in epoch ms. */
  now: () => number
}

/** What a proof other than a password says of the sign-in: the code step follows the right password; a passkey stands alone. */
const PROVEN_BY: Readonly<Record<ProvenLoginRequest['method'], readonly SignInMethod[]>> = {
  'second-factor': ['pwd', 'otp'],
  passkey: ['hwk']
}

export function createLogin ({ users, tokens, audit, config, gate, sessions, devices, now }: LoginDeps): Pick<AuthService, 'login' | 'loginProven'> {
  /**
   * The token, or undefined when a revocation of the account overtook this Login: the epoch
   * read with the account, before its password was checked, is older than the one the
   * revocation recorded beside the account's tokens, and the store issued nothing.
   */
  async function issue (account: UserRecord, presentedToken: string | undefined, client: ClientContext, amr: readonly SignInMethod[]): Promise<IssuedToken | undefined> {
    const issuedAt = now()
    const expiresAt = expiryInstant(issuedAt, lifetimeSeconds(config, account.federated))
    // Relative to the instant the date was computed from (PX): Redis's clock cannot change it.
    const ttlMs = expiresAt - issuedAt
    const record: TokenRecord = { accountId: account.id, username: account.username, federated: account.federated, expiresAt }
    if (account.groups.length > 0) record.groups = account.groups
    const session = (tokenHash: string) => ({ tokenHash, accountId: account.id, created: issuedAt, expiresAt, client, federated: account.federated, amr })
    if (presentedToken !== undefined && isTokenShaped(presentedToken)) {
      const presentedHash = hashToken(presentedToken)
      if (await tokens.refresh(presentedHash, record, ttlMs, account.tokenEpoch, account.groupsVersion)) {
        // The token's life is already reset: a session row that lags says less, it decides nothing.
        await sessions?.refreshed(session(presentedHash)).catch(() => {})
        return { token: presentedToken, expiresAt, refreshed: true, account }
      }
    }
    const token = generateToken(account.id)
    const tokenHash = hashToken(token)
    if (!await tokens.issue(tokenHash, record, ttlMs, account.tokenEpoch, account.groupsVersion)) return undefined
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

  /** The token for an account whose credentials held, audited as a Login. */
  async function signIn (account: UserRecord, username: string, presentedToken: string | undefined, client: ClientContext, proof: { how: '' | `-by-${ProvenLoginRequest['method']}`, amr: readonly SignInMethod[] }): Promise<IssuedToken> {
    const context = { username, clientIp: client.ip, userAgent: client.userAgent }
    const { how, amr } = proof
    const issued = await issue(account, presentedToken, client, amr) ?? await refuseOvertaken(account, context)
    // Best effort and off the answer's path: the admin API's last_login must never fail or slow a Login.
    users.recordLogin(account.id).catch(() => {})
    audit.record({ event: 'login.success', ...context, accountId: account.id, outcome: `${issued.refreshed ? 'refreshed' : 'issued'}${how}` satisfies OutcomeOf<'login.success'> })
    if (devices !== undefined) {
      // Off the answer's path, as last_login: a record that cannot be written costs an alert, never a Login.
      devices.seen(account.id, client.ip, client.userAgent).then((device) => {
        if (device !== undefined) audit.record({ event: 'login.new_device', ...context, accountId: account.id, outcome: 'new-device' satisfies OutcomeOf<'login.new_device'>, device })
      }, () => {})
    }
    return issued
  }

  return {
    async login (request) {
      // Refused before any hashing or counting: a megabyte password must not cost a hash.
      const username = checkedUsername(request.username)
      const password = checkedPassword(request.password)
      const { client } = request
      const { account, amr } = await gate.signIn(username, password, client, { otp: request.otp })
      return await signIn(account, username, request.presentedToken, client, { how: '', amr })
    },

    async loginProven (request) {
      const { username, client } = request
      await gate.allowed(username, client)
      const account = await users.findByUsername(username)
      if (account !== null && account.id === request.accountId && request.tokenEpoch !== undefined && account.tokenEpoch !== request.tokenEpoch) {
        // The token is issued on this same read's epoch: a revocation after it is refused by the token store.
        audit.record({ event: 'login.refused', username, clientIp: client.ip, userAgent: client.userAgent, accountId: account.id, outcome: 'sign-in-ended' })
        throw new SignInEnded()
      }
      // The account as it is now: gone, made again under the name, disabled, or a service account: no sign-in.
      const usable = account !== null && account.id === request.accountId && !account.disabled && account.kind !== 'service'
      if (!usable || !await request.prove(account)) {
        return await gate.failed(username, client, account?.id, usable ? `wrong-${request.method}` : 'unusable-account')
      }
      await gate.settled(username, client, account)
      return await signIn(account, username, request.presentedToken, client, { how: `-by-${request.method}`, amr: PROVEN_BY[request.method] })
    }
  }
}
