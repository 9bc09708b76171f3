import type { TokenRecord } from '@auth-token-service/protocol/layout'
import type { UserRecord } from '../stores/user-store.js'

/**
 * The contract's operations as the routes call them: Login (by password, or by another proof),
 * Authenticate, Logout, and the account's own changes that a Login's check guards. No HTTP here:
 * failures are StatusError values (701, 429, 403, 400, 503) that the routes turn into answers.
 */

/** Who is asking, for the brute-force limits and the audit trail. */
export interface ClientContext {
  ip: string
  userAgent?: string | undefined
  /** The admin credential acting for the account (the admin API); absent for the account's own requests. */
  credential?: string | undefined
  /** The signed-in account acting for the account from the admin console (its username). */
  actor?: string | undefined
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
  /** The active Login token's record; fails with 403 for anything else (an API key, an OpenID Connect access token too). Never writes. */
  authenticate (token: string | undefined): Promise<TokenRecord>
  /**
   * What Authenticate, /auth/verify and /auth/introspect accept: a Login token, an API key, or an
   * OpenID Connect access token. A key's record carries its `keyId`, an access token's its `oidc` client. Writes nothing on the answer's path.
   * `client` (its `ip` read only for a key the token store does not hold: the Fastify request
   * will do, its ip computed only then) is whose budget of key look-ups a lost record spends.
   */
  authenticateCredential (token: string | undefined, client?: { readonly ip: string }): Promise<TokenRecord>
  /** Ends an active token; fails with 403 when it was not active (or another caller ended it first). */
  logout (token: string | undefined, client: ClientContext): Promise<void>
}
