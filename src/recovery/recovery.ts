import { createHash } from 'node:crypto'
import type { ClientContext } from '../core/auth.js'
import { checkedPassword, checkedUsername } from '../core/credentials.js'
import { normalizedEmail } from '../core/email-addresses.js'
import type { OutcomeOf } from '../core/events.js'
import type { AuditActor, InvitationSender, SessionRecorder } from '../core/ports.js'
import type { AuditLog } from '../core/stores/audit-log.js'
import type { LoginLimiter } from '../core/stores/login-limiter.js'
import type { RequestLimiter } from '../core/stores/request-limiter.js'
import { RevocationIncomplete, type TokenStore } from '../core/stores/token-store.js'
import type { UserRecord, UserStore } from '../core/stores/user-store.js'
import { reasons } from '../errors/reasons.js'
import { badRequest } from '../errors/status.js'
import type { PasswordHasher } from '../passwords/hasher.js'
import { passwordRefusal, type PasswordPolicy } from '../passwords/policy.js'
import { sealSecret, type TotpKeys } from '../totp/index.js'
import { createBackgroundWork } from './background.js'
import { isLinkSecret, linkSecretHash, newLinkSecret, sealingContext } from './links.js'
import type { FoundLink, LinkKind, RecoveryStore } from './store.js'

/**
 * Account recovery by email: a reset asked for (matched, limited and queued off the request's
 * path), an invitation, and a link's password set. The routes (routes.ts) and the account
 * administration (core/accounts.ts, through its InvitationSender port) act through this.
 */

/** How many reset mails one account gets per window, however it is asked for (username, address). */
export const MAILS_PER_ACCOUNT = 3
export const ACCOUNT_WINDOW_MS = 3_600_000
/** How many reset requests one username or address may make per window, from anywhere (429 past it). */
export const REQUESTS_PER_IDENTIFIER = 5
export const IDENTIFIER_WINDOW_MS = 900_000
/** One request names one account, or the accounts that share an address: at most this many. */
const MAX_MATCHES = 5

export interface RecoveryDeps {
  store: RecoveryStore
  users: Pick<UserStore, 'findByUsername' | 'setPasswordHash'>
  tokens: Pick<TokenStore, 'terminateAccount'>
  hasher: Pick<PasswordHasher, 'hash'>
  audit: AuditLog
  passwordPolicy: PasswordPolicy
  /** The account's sessions end with its tokens; absent: none kept. */
  sessions?: Pick<SessionRecorder, 'ended'> | undefined
  /** The failed-login lock: a reset lifts it, as an operator's unlock does. */
  limiter?: Pick<LoginLimiter, 'unlock'> | undefined
  /** The account's second factor: a code or recovery code, accepted once (Login's check). */
  secondFactor?: { verify (account: UserRecord, otp: string, client: ClientContext): Promise<boolean> } | undefined
  /** The sealing keys (AUTH_TOTP_KEY): a link's secret waits in the outbox sealed under the current one. */
  keys: () => Promise<TotpKeys>
  /** Reset mails per account (MAILS_PER_ACCOUNT), and reset requests per username or address (REQUESTS_PER_IDENTIFIER). */
  limits: { account: RequestLimiter, identifier: RequestLimiter }
  resetTtlMs: number
  inviteTtlMs: number
  /** A mail was queued: the worker may send it now. */
  onQueued?: () => void
  /** Work after the answer failed (a database or Redis that went away): logged, nobody waits for it. */
  onBackgroundError?: (error: unknown) => void
}

export type ResetOutcome =
  | { kind: 'done', username: string, linkKind: LinkKind }
  /** Unknown, used, expired or superseded, or an account that may no longer use it: nothing changed. */
  | { kind: 'invalid' }
  /** The account has a second factor: a code is needed, or the one given was wrong. Nothing changed. */
  | { kind: 'code-required' | 'wrong-code', link: LinkPage }

/** What the link's page shows. */
export interface LinkPage {
  kind: LinkKind
  username: string
  needsCode: boolean
}

export interface Recovery {
  /**
   * Returns before anything depends on whether an account matched: the lookup, the account's limit
   * and the mail run afterwards (settled() waits for them), so the answer and its time are the same
   * for every identifier. Synchronous on purpose: a caller has nothing to await.
   */
  requestReset (identifier: string): void
  /** Resolves once the work requestReset left behind is done (closing, tests). */
  settled (): Promise<void>
  /** The request-side limit of a username or address (checked before requestReset; 429 past it). */
  identifierLimit (identifier: string): ReturnType<RequestLimiter['hit']>
  invite (account: UserRecord, email: string, actor: AuditActor): Promise<void>
  addressChanged (account: UserRecord): Promise<void>
  /** The link's page, or undefined when the link cannot be used. */
  openLink (secret: string): Promise<LinkPage | undefined>
  completeReset (request: { secret: string, password: string, otp: string | undefined, client: ClientContext }): Promise<ResetOutcome>
}

/** A username or address as the per-identifier limit counts it: hashed, so no address sits in a Redis key. */
function identifierKey (identifier: string): string {
  return createHash('sha256').update(identifier.normalize('NFC').trim().toLowerCase(), 'utf8').digest('base64url').slice(0, 32)
}

function asUsername (identifier: string): string | undefined {
  try {
    return checkedUsername(identifier)
  } catch {
    return undefined
  }
}

const pageOf = (link: FoundLink): LinkPage => ({ kind: link.kind, username: link.username, needsCode: link.totp })

type LinkIssuer = (account: { id: string, username: string }, email: string, kind: LinkKind) => Promise<void>

/** A new link of the account (its older ones voided) and its mail queued, the secret sealed for the outbox. */
function linkIssuer (deps: Pick<RecoveryDeps, 'store' | 'keys' | 'inviteTtlMs' | 'onQueued'> & { resetTtlMs?: number }): LinkIssuer {
  return async (account, email, kind) => {
    const ttlMs = kind === 'invite' ? deps.inviteTtlMs : deps.resetTtlMs
    if (ttlMs === undefined) throw new Error('no reset lifetime given')
    const secret = newLinkSecret()
    const keys = await deps.keys()
    await deps.store.issue({
      accountId: account.id,
      kind,
      secretHash: linkSecretHash(secret),
      ttlMs,
      recipient: email,
      username: account.username,
      sealedSecret: sealSecret(keys.current, Buffer.from(secret, 'utf8'), sealingContext(account.id))
    })
    deps.onQueued?.()
  }
}

function inviteWith (issue: LinkIssuer): InvitationSender['invite'] {
  return async (account, email) => {
    if (account.kind !== 'person' || account.federated || account.disabled) throw badRequest(reasons.notInvitable())
    await issue(account, email, 'invite')
  }
}

/**
 * Invitations alone, for the command line on the database itself: the mail is queued in the
 * outbox, and the service's worker sends it (at once if one runs, else when it starts).
 */
export function createInvitationSender (deps: Pick<RecoveryDeps, 'store' | 'keys' | 'inviteTtlMs'>): InvitationSender {
  return { invite: inviteWith(linkIssuer(deps)), addressChanged: addressChangedWith(deps.store) }
}

/** A link went to the address the account had: once it has another, that link opens nothing. */
function addressChangedWith (store: RecoveryStore): InvitationSender['addressChanged'] {
  return async (account) => { await store.voidLinks(account.id, 'withdrawn: the account\'s address changed') }
}

export function createRecovery (deps: RecoveryDeps): Recovery {
  const { store, users, tokens, hasher, audit, passwordPolicy, limits } = deps
  const background = createBackgroundWork({ onError: (error) => deps.onBackgroundError?.(error) })
  const issue = linkIssuer(deps)

  async function matchAndSend (identifier: string): Promise<void> {
    const username = asUsername(identifier)
    const email = normalizedEmail(identifier)
    if (username === undefined && email === undefined) return
    for (const account of await store.recipients(username, email, MAX_MATCHES)) {
      // Only a person's local, enabled account with an address: the others have no password to reset here.
      if (account.kind !== 'person' || account.federated || account.disabled || account.email === null) continue
      const verdict = await limits.account.hit('reset-mail', account.id)
      if (!verdict.allowed) continue
      await issue(account, account.email, 'reset')
    }
  }

  /** The link, when it can still set the password of an account that may use it. */
  async function usableLink (secret: string): Promise<FoundLink | undefined> {
    if (!isLinkSecret(secret)) return undefined
    const link = await store.findLink(linkSecretHash(secret))
    return link !== undefined && link.usable && link.eligible ? link : undefined
  }

  return {
    requestReset (identifier) {
      background.run(async () => { await matchAndSend(identifier) })
    },
    settled: async () => { await background.settled() },
    identifierLimit: async (identifier) => await limits.identifier.hit('reset-request', identifierKey(identifier)),
    invite: inviteWith(issue),
    addressChanged: addressChangedWith(store),
    async openLink (secret) {
      const link = await usableLink(secret)
      return link === undefined ? undefined : pageOf(link)
    },
    async completeReset ({ secret, password, otp, client }) {
      const link = await usableLink(secret)
      if (link === undefined) return { kind: 'invalid' }
      // The password's own limits and the policy first: a refused one spends nothing.
      const next = checkedPassword(password, 'new_password')
      const refusal = await passwordRefusal(next, link.username, passwordPolicy, 'new_password')
      if (refusal !== undefined) throw badRequest(refusal)
      if (link.totp) {
        if (otp === undefined || otp.trim() === '') return { kind: 'code-required', link: pageOf(link) }
        const account = await users.findByUsername(link.username)
        if (account === null || account.id !== link.accountId) return { kind: 'invalid' }
        if (deps.secondFactor === undefined || !await deps.secondFactor.verify(account, otp.trim(), client)) return { kind: 'wrong-code', link: pageOf(link) }
      }
      const hash = await hasher.hash(next, { account: link.username, ip: client.ip })
      // Used by exactly one request: a second one with the same link (a double submit, a replay) gets nothing.
      if (!await store.consume(link.id)) return { kind: 'invalid' }
      const updated = await users.setPasswordHash(link.username, hash)
      if (updated === null || updated.id !== link.accountId) return { kind: 'invalid' }
      const context = { event: 'password.reset' as const, username: updated.username, accountId: updated.id, clientIp: client.ip, userAgent: client.userAgent }
      let ended: string[]
      try {
        // A password change's revoke-all: the new epoch beside the account's tokens (its OpenID
        // access tokens among them), so that no Login under way with the old password gets one.
        ended = await tokens.terminateAccount(updated.id, updated.tokenEpoch)
      } catch (error) {
        if (error instanceof RevocationIncomplete) audit.record({ ...context, outcome: `tokens-ended-${error.ended}-incomplete` satisfies OutcomeOf<'password.reset'>, tokensEnded: error.ended })
        throw error
      }
      await deps.sessions?.ended(ended)
      await deps.limiter?.unlock(updated.username).catch(() => {})
      const outcome = link.kind === 'invite' ? 'invitation-accepted' satisfies OutcomeOf<'password.reset'> : `tokens-ended-${ended.length}` satisfies OutcomeOf<'password.reset'>
      audit.record({ ...context, outcome, tokensEnded: ended.length })
      return { kind: 'done', username: updated.username, linkKind: link.kind }
    }
  }
}
