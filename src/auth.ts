import type { Config } from './config.js'
import type { PasswordHasher } from './lib/passwords.js'
import { badRequest, loginFailed, unauthorized } from './lib/status.js'
import { isAcceptablePassword, isAcceptableUsername, normalizePassword, normalizeUsername } from './lib/text.js'
import { expiryInstant } from './lib/time.js'
import { generateToken, hashToken, isTokenShaped } from './lib/tokens.js'
import type { TokenRecord, TokenStore } from './stores/token-store.js'
import type { UserRecord, UserStore } from './stores/user-store.js'

/**
 * Login, Authenticate and Logout over the stores. No HTTP here: failures are
 * StatusError values (701, 403, 400, 503) that the routes turn into answers.
 */

export interface LoginRequest {
  username: string
  password: string
  /** A token the caller already holds (cookie or `token` parameter): refreshed when it is theirs. */
  presentedToken?: string | undefined
}

export interface IssuedToken {
  token: string
  /** Epoch milliseconds, a whole second: what `expiration_date` names. */
  expiresAt: number
  refreshed: boolean
  account: UserRecord
}

export interface AuthService {
  login (request: LoginRequest): Promise<IssuedToken>
  /** The active token's record; fails with 403 for anything else. Never writes. */
  authenticate (token: string | undefined): Promise<TokenRecord>
  /** Ends an active token; fails with 403 when it was not active (or another caller ended it first). */
  logout (token: string | undefined): Promise<void>
}

export interface AuthServiceDeps {
  users: UserStore
  tokens: TokenStore
  hasher: PasswordHasher
  config: Pick<Config, 'tokenTtlSeconds' | 'federatedTokenTtlSeconds'>
  /** Wall clock in epoch ms; injectable for tests. */
  now?: () => number
}

export function lifetimeSeconds (config: AuthServiceDeps['config'], federated: boolean): number {
  return federated ? config.federatedTokenTtlSeconds : config.tokenTtlSeconds
}

export function createAuthService (deps: AuthServiceDeps): AuthService {
  const { users, tokens, hasher, config } = deps
  const now = deps.now ?? Date.now

  async function checkCredentials (username: string, password: string): Promise<UserRecord> {
    const account = await users.findByUsername(username)
    if (account === null) {
      // Same work as a real check, so response time does not reveal which names exist.
      await hasher.verifyDummy(password)
      throw loginFailed()
    }
    const matches = await hasher.verify(account.passwordHash, password)
    if (!matches || account.disabled) throw loginFailed()
    if (hasher.needsRehash(account.passwordHash)) {
      // Best effort: a failed upgrade must not fail a correct login.
      await hasher.hash(password).then(async (hash) => await users.setPasswordHash(account.username, hash)).catch(() => {})
    }
    return account
  }

  return {
    async login (request) {
      const username = normalizeUsername(request.username)
      const password = normalizePassword(request.password)
      // Refused before any hashing: a megabyte password must not cost a hash.
      if (!isAcceptableUsername(username) || !isAcceptablePassword(password)) throw badRequest()

      const account = await checkCredentials(username, password)
      const issuedAt = now()
      const expiresAt = expiryInstant(issuedAt, lifetimeSeconds(config, account.federated))
      // Relative to the instant the date was computed from (PX): Redis's clock cannot change it.
      const ttlMs = expiresAt - issuedAt
      const record: TokenRecord = { accountId: account.id, username: account.username, federated: account.federated, expiresAt }

      const presented = request.presentedToken
      if (presented !== undefined && isTokenShaped(presented) &&
          await tokens.refresh(hashToken(presented), record, ttlMs)) {
        return { token: presented, expiresAt, refreshed: true, account }
      }
      const token = generateToken()
      await tokens.issue(hashToken(token), record, ttlMs)
      return { token, expiresAt, refreshed: false, account }
    },

    async authenticate (token) {
      if (token === undefined || !isTokenShaped(token)) throw unauthorized()
      const record = await tokens.find(hashToken(token))
      if (record === null) throw unauthorized()
      return record
    },

    async logout (token) {
      if (token === undefined || !isTokenShaped(token)) throw unauthorized()
      if (!await tokens.terminate(hashToken(token))) throw unauthorized()
    }
  }
}
