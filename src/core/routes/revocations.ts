import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyPluginAsync } from 'fastify'
import type { RevocationFeed } from '../stores/revocation-feed.js'
import type { RevocationWatcher } from '@auth-token-service/protocol/feed'
import { serviceUnavailable, StatusError } from '../../errors/status.js'
import { refuseOtherMethods } from '../../http/methods.js'
import { performance } from 'node:perf_hooks'
import { FEED_HEARTBEAT_MS, FEED_PROOF_MS } from '@auth-token-service/protocol/feed'

export interface RevocationRoutesOptions {
  revocations: RevocationFeed
  /**
   * The key a subscriber sends as `Authorization: Bearer <key>` (AUTH_REVOCATIONS_KEY).
   * Undefined: the feed is open (on a loopback-only listener, for a first run), or, with `open` false, off (404).
   */
  key?: string | undefined
  /** Without a key: serve the feed to anyone (true) or not at all (false). */
  open?: boolean
  /** Subscribers at once; past it a new one is answered 503 with Retry-After. */
  maxSubscribers?: number
  /** How often a `heartbeat` event goes out while this instance's own feed is proven (packages/protocol/src/feed.ts); it also keeps idle proxies from closing the stream. */
  heartbeatMs?: number
  /** How long a subscriber's socket may stay full before it is cut. */
  drainTimeoutMs?: number
  /** How much may wait in memory for a subscriber's socket before it is cut. */
  maxPendingBytes?: number
  /** Told when a subscriber is cut for not reading (for the log). */
  onCut?: (remoteAddress: string | undefined) => void
}

const unauthorizedSubscriber = (): StatusError => new StatusError(401, 'Unauthorized', 401, { 'www-authenticate': 'Bearer' })
const tooManySubscribers = (): StatusError => new StatusError(503, 'Service Unavailable', 503, { 'retry-after': '5' })
const notFound = (): StatusError => new StatusError(404, 'Not Found', 404)

/** SHA-256 of each side first: timingSafeEqual wants equal lengths, and the digest hides the key's. */
function sameKey (given: string, expected: string): boolean {
  const digest = (value: string): Buffer => createHash('sha256').update(value).digest()
  return timingSafeEqual(digest(given), digest(expected))
}

function bearer (header: string | undefined): string | undefined {
  const match = header === undefined ? null : /^Bearer +(\S+)\s*$/i.exec(header)
  return match?.[1]
}

interface Subscriber {
  /** A revocation event: written, or the subscriber cut when it has not taken the last ones. */
  send (chunk: string): void
  /** A heartbeat: written only while the subscriber keeps up. */
  beat (chunk: string): void
  end (): void
}

/**
 * GET /auth/revocations: a server-sent event stream of token hashes as they are
 * ended, for caching verifiers (the guard's HTTP mode) that cannot reach Redis.
 * The first event is `ready`; each `revoked` event carries space-separated hashes; a
 * `heartbeat` event every 200 ms carries how many more milliseconds the stream is proven
 * current (packages/protocol/src/feed.ts).
 * When this instance's own feed is cut, every stream is closed, so that clients drop
 * their caches and reconnect. Hashes of ended tokens are no secret, but the feed tells
 * when people log out and holds a connection open each: it needs a key, has a cap, and
 * never buffers for a subscriber that does not read.
 */
export const revocationRoutes: FastifyPluginAsync<RevocationRoutesOptions> = async (app, options) => {
  const { revocations, key, open = true, maxSubscribers = 64, heartbeatMs = FEED_HEARTBEAT_MS, drainTimeoutMs = 10_000, maxPendingBytes = 1024 * 1024, onCut } = options
  const streams = new Set<Subscriber>()
  let live = false
  /** Monotonic instant until which this instance's own feed is proven current. */
  let provenUntil = 0
  const watcher: RevocationWatcher = {
    revoked (hashes) {
      const event = `event: revoked\ndata: ${hashes.join(' ')}\n\n`
      for (const stream of streams) stream.send(event)
    },
    live (validForMs) {
      live = true
      provenUntil = validForMs === undefined ? Infinity : Math.max(provenUntil, performance.now() + validForMs)
    },
    interrupted () {
      live = false
      provenUntil = 0
      for (const stream of streams) stream.end()
    }
  }
  const stopWatching = revocations.watchRevocations(watcher)
  // Heartbeats pass on this instance's proof, never more: each says how much longer it holds
  // (at most FEED_PROOF_MS), and none goes out once it has lapsed (its Redis half-open, say),
  // so a guard's trust lapses with it. They also keep idle proxies from closing the stream.
  const heartbeat = setInterval(() => {
    if (streams.size === 0) return
    const remaining = Math.min(FEED_PROOF_MS, provenUntil - performance.now())
    if (!live || remaining <= 0) return
    const event = `event: heartbeat\ndata: ${Math.floor(remaining)}\n\n`
    for (const stream of streams) stream.beat(event)
  }, heartbeatMs)
  heartbeat.unref()
  // preClose, not onClose: open streams would otherwise keep the server from closing.
  app.addHook('preClose', async () => {
    clearInterval(heartbeat)
    stopWatching()
    for (const stream of streams) stream.end()
  })

  app.get('/auth/revocations', {
    schema: {
      tags: ['operations'],
      summary: 'Server-sent events: hashes of tokens as they are ended',
      description: 'Authorization: Bearer <AUTH_REVOCATIONS_KEY>. First event `ready`; then `revoked` events whose data is space-separated SHA-256 (base64url) token hashes, ' +
        'and every 200 ms, while this instance\'s own feed is proven current, a `heartbeat` event whose data is how many more milliseconds that proof holds (a cache trusts the stream no longer). ' +
        'Closed when this instance loses its own feed: clients drop cached answers and reconnect; closed too when the subscriber does not read. ' +
        'The stream never ends by itself: watch it with `curl -N -H "Authorization: Bearer $AUTH_REVOCATIONS_KEY" <internal listener>/auth/revocations`.'
    }
  }, async (request, reply) => {
    if (key === undefined) {
      if (!open) throw notFound()
    } else {
      const given = bearer(request.headers.authorization)
      if (given === undefined || !sameKey(given, key)) throw unauthorizedSubscriber()
    }
    if (!live) throw serviceUnavailable('redis')
    if (streams.size >= maxSubscribers) throw tooManySubscribers()
    reply.hijack()
    const raw = reply.raw
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      'x-accel-buffering': 'no',
      connection: 'keep-alive'
    })
    // Full: the socket took less than was written, and Node holds the rest in memory. A
    // revocation cannot be skipped (the subscriber's cache would keep an ended token), so a
    // subscriber that lets more than maxPendingBytes pile up, or stays full for drainTimeoutMs,
    // is cut: it reconnects and starts again with an empty cache, as after any break in the feed.
    // (A burst of events, such as a revoke-all's batches, may fill a reader's socket for a
    // moment: that alone is no reason to cut it.)
    let full: NodeJS.Timeout | undefined
    const cut = (): void => {
      clearTimeout(full)
      onCut?.(request.socket.remoteAddress)
      raw.destroy()
    }
    const write = (chunk: string): void => {
      if (raw.destroyed) return
      if (raw.write(chunk)) return
      if (raw.writableLength > maxPendingBytes) {
        cut()
        return
      }
      if (full !== undefined) return
      full = setTimeout(cut, drainTimeoutMs)
      raw.once('drain', () => {
        clearTimeout(full)
        full = undefined
      })
    }
    const stream: Subscriber = {
      send: write,
      // A heartbeat is skipped, never queued, for a subscriber that has not taken the last events.
      beat: (chunk) => { if (full === undefined) write(chunk) },
      end: () => { raw.end() }
    }
    streams.add(stream)
    raw.once('close', () => {
      clearTimeout(full)
      streams.delete(stream)
    })
    write('event: ready\ndata: \n\n')
  })
  refuseOtherMethods(app, '/auth/revocations', ['GET'])
}
