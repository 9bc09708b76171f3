import { authenticateAt, type FetchFunction } from '../client/wire.js'
import type { RedisClient } from '../stores/redis/client.js'
import { createRedisTokenStore } from '../stores/redis/token-store.js'
import type { RevocationWatcher } from '../stores/revocation-feed.js'
import type { TokenRecord } from '../tokens/record.js'
import { withTimeout } from '../time-limit.js'
import { followRevocations } from './sse-feed.js'

/** Answers from the token service's side, whichever way it is reached. */
export interface Verifier {
  /** The active token's record, null for unknown, expired or terminated; throws when nobody can say. */
  verify (token: string, hash: string): Promise<TokenRecord | null>
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

async function within<T> (promise: Promise<T>, ms: number): Promise<T> {
  return await withTimeout(promise, ms, () => { throw new VerifierUnavailable(`no answer within ${ms} ms`) })
}

export interface DirectVerifierOptions {
  redis?: RedisClient | undefined
  redisUrl?: string | undefined
  keyPrefix: string
  timeoutMs: number
  onError: (error: Error) => void
}

/**
 * Straight against the service's Redis: one GET of `<prefix>t:<hash>`. The store is
 * the service's own Redis store, so key layout and record format cannot drift; it
 * closes only the connections it opened (a handed-in client stays open).
 */
export function directVerifier (options: DirectVerifierOptions): Verifier {
  const store = createRedisTokenStore({
    ...(options.redis === undefined ? { url: options.redisUrl } : { redis: options.redis }),
    keyPrefix: options.keyPrefix,
    // Unused here: the guard never terminates a token.
    denyTtlMs: 1000,
    commandTimeoutMs: options.timeoutMs,
    onError: options.onError
  })
  let stopWatching: (() => void) | undefined
  return {
    // The race also bounds a handed-in client that queues commands while Redis is away.
    verify: async (_token, hash) => await within(store.find(hash), options.timeoutMs),
    watch (watcher) {
      stopWatching = store.watchRevocations(watcher)
    },
    async settle (waitMs) {
      // A lazy client fails its first command while it connects: connect first, but never wait long.
      await within(store.ready(), waitMs).catch(() => {})
    },
    async close () {
      stopWatching?.()
      await store.close()
    }
  }
}

export interface HttpVerifierOptions {
  authenticateUrl: URL
  revocationsUrl: URL
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
      const result = await authenticateAt(options.authenticateUrl, token, { timeoutMs: options.timeoutMs, fetch: options.fetch })
      if (result.ok) {
        return { accountId: result.accountId, username: result.username, federated: result.federated, expiresAt: result.expiresAt.getTime() }
      }
      const { error } = result
      if (error.kind === 'status' && error.status === 403) return null
      throw new VerifierUnavailable(
        error.kind === 'status' ? `Authenticate answered ${error.httpStatus} (${error.status})` : error.kind === 'network' ? 'Authenticate unreachable' : error.message,
        { cause: error.kind === 'network' ? error.cause : undefined })
    },
    watch (watcher) {
      feed = followRevocations({ url: options.revocationsUrl, fetch: options.fetch, onError: options.onError }, watcher)
    },
    async settle () {},
    async close () {
      await feed?.close()
    }
  }
}
