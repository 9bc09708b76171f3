import type { ClientContext } from '../core/auth.js'
import type { SignInMethod } from '../core/ports.js'

/**
 * Sessions: what a person sees of their tokens. Every token issued by Login has a session: a
 * public random id (not the token, not derivable to it), when and from where it began, when a
 * Login last refreshed it, and its expiry. The metadata lives in the user database, written by
 * the Login that already touches it; the token store keeps only what Authenticate needs, so a
 * token's Redis footprint does not grow (docs/revocation-and-sessions.md, "Sessions").
 */

export interface SessionInfo {
  /** Public and random: 16 bytes, base64url. */
  id: string
  /** Epoch milliseconds. */
  created: number
  /** Epoch milliseconds of the last refresh by Login; null when never refreshed. */
  refreshed: number | null
  /** Epoch milliseconds, the `expiration_date` the client was given. */
  expiresAt: number
  ip: string
  /** As sent at creation, cut to USER_AGENT_MAX characters, control characters escaped. */
  userAgent: string
  federated: boolean
  /** The session of the token hash given to `list` (always false without one). */
  current: boolean
}

export interface Sessions {
  /** Active sessions of the account, newest first; `current` marks the one whose token hash is given. */
  list (accountId: string, currentTokenHash?: string): Promise<SessionInfo[]>
  /**
   * Ends one session of this account exactly as Logout ends its token (deny set, revocation feed,
   * audit event). False for an unknown id or another account's, by the same one query (no timing
   * tells them apart), and for a session whose token has already ended. `actor`: who did it, for
   * the audit event's outcome (`terminated-by-<actor>`), when not the owner.
   */
  end (accountId: string, sessionId: string, client: ClientContext, actor?: string): Promise<boolean>
  /**
   * Ends all of the account's sessions except the one with this token hash (none excepted when
   * absent); returns how many ended. Tokens with no session row (issued before sessions were
   * kept) end too: it ends the account's tokens in the token store. It raises no epoch (a
   * Login under way may still issue after it); a revoke-all for an account is AccountAdmin's.
   */
  endAll (accountId: string, client: ClientContext, exceptTokenHash?: string, actor?: string): Promise<number>
  /** The session id of a token hash, to mark the current one. */
  idOf (tokenHash: string): Promise<string | null>
  /**
   * How the token's sign-in was made, as its last Login recorded it (the OpenID Connect `amr`);
   * null when unknown: no row, or one begun before the methods were kept.
   */
  amrOf (tokenHash: string): Promise<SignInMethod[] | null>
  /** How many sessions of every account have not expired (a dashboard's count: rows, not tokens checked one by one). */
  countActive (): Promise<number>
}

/** What Login tells the sessions (NewSession), and how (SessionRecorder): core's port, which the SQL sessions fill. */
export type { NewSession, SessionRecorder, SignInMethod } from '../core/ports.js'
