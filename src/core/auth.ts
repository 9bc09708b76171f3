import type { Config } from '../config/config.js'
import type { PasswordHasher } from '../passwords/hasher.js'
import { DEFAULT_PASSWORD_POLICY, type PasswordPolicy } from '../passwords/policy.js'
import type { AuditLog } from './stores/audit-log.js'
import type { LoginLimiter } from './stores/login-limiter.js'
import type { TokenStore } from './stores/token-store.js'
import type { UserStore } from './stores/user-store.js'
import type { AccountDirectory, ApiKeyLookup, LoginDevices, LoginSecondFactor, SessionRecorder } from './ports.js'
import type { AuthService } from './auth/types.js'
import { createCredentialCheck } from './auth/account-credentials.js'
import { createPasswordCheck } from './auth/password-check.js'
import { createLogin } from './auth/login.js'
import { createVerification } from './auth/verify.js'
import { createSelfService } from './auth/self-service.js'
import { createLogout } from './auth/logout.js'

import { createGroupChanges, type AccountKeyHashes } from './groups.js'
import type { GroupStore } from './stores/group-store.js'

/**
 * Login, Authenticate and Logout over the stores, and the account's own changes that a Login's
 * check guards: one facade (AuthService, auth/types.ts) over its parts in auth/ — the gate every
 * password passes (account-credentials.ts, password-check.ts), Login (login.ts), Authenticate
 * (verify.ts), Logout (logout.ts) and self-service (self-service.ts). No HTTP here: failures are
 * StatusError values (701, 429, 403, 400, 503) that the routes turn into answers.
 */

export type {
  AuthService, ClientContext, IssuedToken, LoginRequest, PasswordChangeRequest, ProvenLoginRequest, SecondFactorRemoval, StepUpRequest
} from './auth/types.js'
export { lifetimeSeconds } from './auth/login.js'
export { federatedPassword } from './auth/self-service.js'

export interface AuthServiceDeps {
  users: UserStore
  tokens: TokenStore
  hasher: PasswordHasher
  limiter: LoginLimiter
  audit: AuditLog
  config: Pick<Config, 'tokenTtlSeconds' | 'federatedTokenTtlSeconds'> & Partial<Pick<Config, 'ldapAutoProvision'>>
  /** The directory federated accounts log in through; absent: federation off (federated accounts use a local hash). */
  directory?: AccountDirectory | undefined
  /** Where Login records each token's session; absent: none recorded. */
  sessions?: SessionRecorder | undefined
  /** What a new password must be (POST /auth/Password); NIST SP 800-63B's defaults when absent. */
  passwordPolicy?: PasswordPolicy | undefined
  /** API keys: absent, an `atsk_` secret is refused as any unknown token. */
  apiKeys?: ApiKeyLookup | undefined
  /** TOTP: absent, no account has a second factor. */
  secondFactor?: LoginSecondFactor | undefined
  /** The clients each account logged in from (login.new_device, webhooks on); absent: not tracked. */
  devices?: LoginDevices | undefined
  /** Group membership: a federated account's directory groups are stored at each Login (absent: not stored). */
  groupStore?: GroupStore | undefined
  /** The account's live API keys by hash, for their records to carry a change of its directory groups. */
  keyHashes?: AccountKeyHashes | undefined
  /** Wall clock in epoch ms; injectable for tests. */
  now?: () => number
}

export function createAuthService (deps: AuthServiceDeps): AuthService {
  const { users, tokens, hasher, limiter, audit, config, directory, sessions, apiKeys, secondFactor, devices } = deps
  const checkCredentials = createCredentialCheck({ users, hasher, config, directory })
  const groupChanges = deps.groupStore === undefined ? undefined : createGroupChanges({ store: deps.groupStore, tokens, audit, keys: deps.keyHashes })
  const gate = createPasswordCheck({ checkCredentials, limiter, audit, secondFactor, groupChanges })
  const { authenticate, authenticateCredential } = createVerification({ tokens, apiKeys })
  const { login, loginProven } = createLogin({ users, tokens, audit, config, gate, sessions, devices, now: deps.now ?? Date.now })
  const { changePassword, removeSecondFactor, stepUp } = createSelfService({
    users, tokens, hasher, audit, gate, authenticate, sessions, secondFactor, passwordPolicy: deps.passwordPolicy ?? DEFAULT_PASSWORD_POLICY
  })
  return { login, loginProven, changePassword, removeSecondFactor, stepUp, authenticate, authenticateCredential, logout: createLogout({ tokens, audit, sessions }) }
}
