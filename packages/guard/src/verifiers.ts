import { authenticateAt, type FetchFunction } from './client/wire.js'
import type { TokenRecord } from '@auth-token-service/protocol/layout'
import type { RevocationWatcher } from '@auth-token-service/protocol/feed'
import { withTimeout } from '@auth-token-service/protocol/time-limit'
import { followRevocations } from './sse-feed.js'

/** An active token, and how much longer it lives as its source measured it (from the request's start). */
export interface Verified {
  record: TokenRecord
  /** Milliseconds; absent when not measured (no cache to keep). */
  remainingMs?: number | undefined
}

/** Answers from the token service's side, whichever way it is reached. */
export interface Verifier {
  /** The active token, null for unknown, expired or terminated; throws when nobody can say. */
  verify (token: string, hash: string): Promise<Verified | null>
  /** Starts following revocations (only when there is a cache to keep right). */
  watch (watcher: RevocationWatcher): void
  /** Resolves when the verifier is worth asking, or after `waitMs` in any case. */
  settle (waitMs: number): Promise<void>
  close (): Promise<void>
}

export class VerifierUnavailable extends Error {
  constructor (message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'VerifierUnavailable'
  }
}

export async function within<T> (promise: Promise<T>, ms: number): Promise<T> {
  return await withTimeout(promise, ms, () => { throw new VerifierUnavailable(`no answer within ${ms} ms`) })
}

export interface HttpVerifierOptions {
  authenticateUrl: URL
  revocationsUrl: URL
  revocationsKey?: string | undefined
  timeoutMs: number
  fetch: FetchFunction
  onError: (error: unknown) => void
}

/**
 * Over HTTP against the service's Authenticate, the token in a form body (never in
 * a URL that a proxy logs); fetch's keep-alive pool, one timeout, no retries.
 * 403 is a refusal; anything else that is not a success (a network error, a
 * timeout, a 5xx, a misrouted 404) means nobody could say.
 */
export function httpVerifier (options: HttpVerifierOptions): Verifier {
  let feed: { close: () => Promise<void> } | undefined
  return {
    async verify (token) {
      let serverNow: number | undefined
      const result = await authenticateAt(options.authenticateUrl, token, {
        timeoutMs: options.timeoutMs,
        fetch: options.fetch,
        onAnswer: (answer) => { serverNow = Date.parse(answer.headers.get('date') ?? '') }
      })
      if (result.ok) {
        const expiresAt = result.expiresAt.getTime()
        // By the service's clock: its `Date` names the second it answered in (the instant may be up
        // to 1 s later, hence the second taken off); no Date, nothing is cached.
        const remainingMs = serverNow === undefined || Number.isNaN(serverNow) ? 0 : Math.max(0, expiresAt - serverNow - 1000)
        const record: TokenRecord = { accountId: result.accountId, username: result.username, federated: result.federated, expiresAt, groups: result.groups }
        if (result.keyId !== undefined) record.keyId = result.keyId
        if (result.clientId !== undefined) record.oidc = { clientId: result.clientId }
        return { record, remainingMs }
      }
      const { error } = result
      if (error.kind === 'status' && error.status === 403) return null
      throw new VerifierUnavailable(
        error.kind === 'status' ? `Authenticate answered ${error.httpStatus} (${error.status})` : error.kind === 'network' ? 'Authenticate unreachable' : error.message,
        { cause: error.kind === 'network' ? error.cause : undefined })
    },
    watch (watcher) {
      feed = followRevocations({ url: options.revocationsUrl, key: options.revocationsKey, fetch: options.fetch, onError: options.onError }, watcher)
    },
    async settle () {},
    async close () {
      await feed?.close()
    }
  }
}
