import type Provider from 'oidc-provider'
import type { Client } from 'oidc-provider'
import type { RevocationWatcher } from '@auth-token-service/protocol/feed'
import type { RevocationFeed } from '../core/stores/revocation-feed.js'
import type { TokenStore } from '../core/stores/token-store.js'
import type { SignInLinks } from './sign-in-links.js'

/*
 * Back-channel logout (OpenID Connect Back-Channel Logout 1.0): when a sign-in session ends, by
 * whatever way (sign-out, Logout of its token, a session ended by id, a revoke-all, a disable, a
 * password change), each client that holds tokens from it and registered a `backchannel_logout_uri`
 * is sent a logout token.
 *
 * Every one of those ways ends the sign-in token in the token store, and the token store announces
 * it on the revocation feed (the one guards follow): this listens there, so no way of ending a
 * session is left out and none waits for it (a Logout answers as soon as its token is ended). For
 * each ended hash, the provider sessions linked to it (sign-in-links.ts) are taken, in one step
 * that only one instance of the service wins; each session's clients and sids are read, the session
 * is destroyed (it stood on nothing any more), and each client with a back-channel URI is sent its
 * logout token by oidc-provider (`client.backchannelLogout`: signed with the provider's keys, `iss`,
 * `aud`, `iat`, `jti`, `sid`, `events`).
 *
 * What it guarantees: at most once per client and ended sign-in (one instance takes the sessions),
 * tried again after each delay of `retryDelaysMs` while the client's URI fails (a network error or
 * an answer other than 200/204); a send given up on is logged at error with the client's id, and so
 * is one the service stopped before making. Not sent: when the ending was not heard — no instance
 * followed the feed then, and its hash left the deny set (AUTH_DENY_TTL_SECONDS) before one came
 * back (the feed's catch-up reads the deny set) — or when the process died between taking the
 * sessions and sending. The tokens ended all the same: the logout token is the client's cue to end
 * its own session, not what ends the tokens.
 */

/** oidc-provider's Client has it (lib/models/client.js); its types do not declare it. */
type LoggingOut = Client & { backchannelLogout: (accountId: string, sid: string) => Promise<void> }

function canLogOut (client: Client): client is LoggingOut {
  return 'backchannelLogout' in client && typeof client.backchannelLogout === 'function'
}

export interface BackchannelLog {
  warn (details: Record<string, unknown>, message: string): void
  error (details: Record<string, unknown>, message: string): void
}

export interface BackchannelDeps {
  revocations: Pick<RevocationFeed, 'watchRevocations' | 'listDenied'>
  tokens: Pick<TokenStore, 'find'>
  links: SignInLinks
  /** The provider now (a key rotation makes a new one). */
  provider: () => Provider
  log: BackchannelLog
  /** The waits before each new try of a failed send (or of a failed look at the stores). */
  retryDelaysMs: readonly number[]
}

/** One logout token to send. */
export interface LogoutNotice {
  clientId: string
  accountId: string
  sid: string
}

export interface BackchannelLogout {
  /** A send that failed once already (the provider's own, at its end_session endpoint): tried again on the schedule. */
  retry (notice: LogoutNotice, failure: unknown): void
  /** Stops following the feed; sends not yet made are logged as not delivered. */
  stop (): Promise<void>
}

/** How many hashes are looked at together. */
const BATCH = 32

const messageOf = (error: unknown): string => error instanceof Error ? error.message : String(error)

export function startBackchannelLogout (deps: BackchannelDeps): BackchannelLogout {
  const { tokens, links, log, retryDelaysMs } = deps
  const pending = new Set<string>()
  const timers = new Map<NodeJS.Timeout, () => void>()
  let draining: Promise<void> | undefined
  let stopped = false
  let live = false

  /** Runs `task` after `ms`, unless the service stops first (then `dropped`). */
  const later = (ms: number, task: () => void, dropped: () => void): void => {
    const timer = setTimeout(() => {
      timers.delete(timer)
      task()
    }, ms)
    timer.unref()
    timers.set(timer, dropped)
  }

  async function send (notice: LogoutNotice, attempt: number): Promise<void> {
    const details = { client_id: notice.clientId, account_id: notice.accountId, attempt: attempt + 1 }
    try {
      const client = await deps.provider().Client.find(notice.clientId)
      // Removed since: its tokens were ended with it, and it has nowhere to be told.
      if (client === undefined || client.backchannelLogoutUri === undefined || !canLogOut(client)) return
      await client.backchannelLogout(notice.accountId, notice.sid)
    } catch (error) {
      scheduleRetry(notice, attempt + 1, { ...details, reason: messageOf(error) })
    }
  }

  function scheduleRetry (notice: LogoutNotice, attempt: number, details: Record<string, unknown>): void {
    const wait = retryDelaysMs[attempt - 1]
    if (wait === undefined || stopped) {
      log.error(details, 'back-channel logout not delivered: the client was not told its session ended')
      return
    }
    log.warn({ ...details, retry_in_ms: wait }, 'back-channel logout failed: trying again')
    later(wait, () => { send(notice, attempt).catch(() => {}) }, () => {
      log.error({ ...details, reason: 'the service stopped' }, 'back-channel logout not delivered: the client was not told its session ended')
    })
  }

  /** A provider session whose sign-in ended: its clients are told, and it goes. */
  async function endSession (sessionUid: string): Promise<void> {
    const provider = deps.provider()
    const session = await provider.Session.findByUid(sessionUid)
    if (session === undefined) return
    const accountId = session.accountId
    const authorizations = Object.entries(session.authorizations ?? {})
    await session.destroy()
    if (accountId === undefined) return
    for (const [clientId, { sid }] of authorizations) {
      if (sid !== undefined) await send({ clientId, accountId, sid }, 0)
    }
  }

  /** An ended token: when it was a sign-in that provider sessions stood on, those sessions end. */
  async function ended (tokenHash: string): Promise<void> {
    // Most ended tokens are no sign-in of the provider's sessions: one read says so.
    if ((await links.sessionsOf(tokenHash)).length === 0) return
    // The feed announces a token whose groups changed too: that one still stands.
    if (await tokens.find(tokenHash, true) !== null) return
    for (const uid of await links.takeSessions(tokenHash)) {
      // Linked to a newer sign-in since (the same browser signed in again): not this one's to end.
      if (await links.signInOf(uid) === tokenHash) await endSession(uid)
    }
  }

  async function look (tokenHash: string, attempt: number): Promise<void> {
    try {
      await ended(tokenHash)
    } catch (error) {
      const wait = retryDelaysMs[attempt]
      const details = { reason: messageOf(error), attempt: attempt + 1 }
      if (wait === undefined || stopped) {
        log.error(details, 'back-channel logout: an ended sign-in could not be looked up; its clients are not told')
        return
      }
      log.warn(details, 'back-channel logout: an ended sign-in could not be looked up; trying again')
      later(wait, () => { look(tokenHash, attempt + 1).catch(() => {}) }, () => {
        log.error({ ...details, reason: 'the service stopped' }, 'back-channel logout: an ended sign-in was not looked up; its clients are not told')
      })
    }
  }

  async function drain (): Promise<void> {
    while (pending.size > 0 && !stopped) {
      const batch = [...pending].slice(0, BATCH)
      for (const hash of batch) pending.delete(hash)
      await Promise.all(batch.map(async (hash) => { await look(hash, 0) }))
    }
  }

  /** One drain at a time; hashes that came while it finished get the next. */
  function kick (): void {
    if (draining !== undefined || pending.size === 0 || stopped) return
    draining = drain().finally(() => {
      draining = undefined
      kick()
    })
  }

  function enqueue (hashes: readonly string[]): void {
    if (stopped) return
    for (const hash of hashes) pending.add(hash)
    kick()
  }

  const watcher: RevocationWatcher = {
    revoked: enqueue,
    live () {
      if (live) return
      live = true
      // Connected again (or for the first time): what ended meanwhile is still in the deny set.
      deps.revocations.listDenied().then(enqueue, (error: unknown) => {
        log.error({ reason: messageOf(error) }, 'back-channel logout: the ended tokens could not be listed after the feed came back; sessions ended meanwhile are not told')
      })
    },
    interrupted () { live = false }
  }
  const unwatch = deps.revocations.watchRevocations(watcher)

  return {
    retry (notice, failure) {
      scheduleRetry(notice, 1, { client_id: notice.clientId, account_id: notice.accountId, attempt: 1, reason: messageOf(failure) })
    },
    async stop () {
      stopped = true
      unwatch()
      await draining
      for (const [timer, dropped] of timers) {
        clearTimeout(timer)
        dropped()
      }
      timers.clear()
    }
  }
}
