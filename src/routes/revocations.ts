import type { FastifyPluginAsync } from 'fastify'
import type { RevocationWatcher, TokenStore } from '../stores/token-store.js'
import { serviceUnavailable } from '../lib/status.js'
import { refuseOtherMethods } from './http.js'
import { performance } from 'node:perf_hooks'
import { FEED_HEARTBEAT_MS, FEED_PROOF_MS } from '../stores/feed-liveness.js'

export interface RevocationRoutesOptions {
  tokens: TokenStore
  /** How often a `heartbeat` event goes out while this instance's own feed is proven (stores/feed-liveness.ts). */
  heartbeatMs?: number
}

/**
 * GET /auth/revocations: a server-sent event stream of token hashes as they are
 * ended, for caching verifiers (the guard's HTTP mode) that cannot reach Redis.
 * The first event is `ready`; each `revoked` event carries space-separated hashes; a
 * `heartbeat` event every 200 ms carries how many more milliseconds the stream is proven
 * current (stores/feed-liveness.ts).
 * When this instance's own feed is cut, every stream is closed, so that clients drop
 * their caches and reconnect. Hashes of ended tokens are no secret.
 */
export const revocationRoutes: FastifyPluginAsync<RevocationRoutesOptions> = async (app, { tokens, heartbeatMs = FEED_HEARTBEAT_MS }) => {
  const streams = new Set<{ write: (chunk: string) => void, end: () => void }>()
  let live = false
  /** Monotonic instant until which this instance's own feed is proven current. */
  let provenUntil = 0
  const watcher: RevocationWatcher = {
    revoked (hashes) {
      const event = `event: revoked\ndata: ${hashes.join(' ')}\n\n`
      for (const stream of streams) stream.write(event)
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
  const stopWatching = tokens.watchRevocations(watcher)
  // Heartbeats pass on this instance's proof, never more: each says how much longer it holds
  // (at most FEED_PROOF_MS), and none goes out once it has lapsed (its Redis half-open, say),
  // so a guard's trust lapses with it. They also keep idle proxies from closing the stream.
  const heartbeat = setInterval(() => {
    if (streams.size === 0) return
    const remaining = Math.min(FEED_PROOF_MS, provenUntil - performance.now())
    if (!live || remaining <= 0) return
    const event = `event: heartbeat\ndata: ${Math.floor(remaining)}\n\n`
    for (const stream of streams) stream.write(event)
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
      description: 'First event `ready`; then `revoked` events whose data is space-separated SHA-256 (base64url) token hashes, ' +
        'and every 200 ms, while this instance\'s own feed is proven current, a `heartbeat` event whose data is how many more milliseconds that proof holds (a cache trusts the stream no longer). ' +
        'Closed when this instance loses its own feed: clients drop cached answers and reconnect. ' +
        'The stream never ends by itself, so Try it out here keeps waiting: watch it with `curl -N <service>/auth/revocations`.'
    }
  }, async (_request, reply) => {
    if (!live) throw serviceUnavailable('redis')
    reply.hijack()
    const raw = reply.raw
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      'x-accel-buffering': 'no',
      connection: 'keep-alive'
    })
    const stream = {
      write: (chunk: string) => { raw.write(chunk) },
      end: () => { raw.end() }
    }
    streams.add(stream)
    raw.once('close', () => { streams.delete(stream) })
    raw.write('event: ready\ndata: \n\n')
  })
  refuseOtherMethods(app, '/auth/revocations', ['GET'])
}
