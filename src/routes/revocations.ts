import type { FastifyPluginAsync } from 'fastify'
import type { RevocationFeed, RevocationWatcher } from '../stores/revocation-feed.js'
import { serviceUnavailable } from '../http/status.js'
import { refuseOtherMethods } from '../http/methods.js'

export interface RevocationRoutesOptions {
  revocations: RevocationFeed
  /** Comment lines keep idle proxies from closing the stream. */
  heartbeatMs?: number
}

/**
 * GET /auth/revocations: a server-sent event stream of token hashes as they are
 * ended, for caching verifiers (the guard's HTTP mode) that cannot reach Redis.
 * The first event is `ready`; each `revoked` event carries space-separated hashes.
 * When this instance's own feed is cut, every stream is closed, so that clients drop
 * their caches and reconnect. Hashes of ended tokens are no secret.
 */
export const revocationRoutes: FastifyPluginAsync<RevocationRoutesOptions> = async (app, { revocations, heartbeatMs = 15_000 }) => {
  const streams = new Set<{ write: (chunk: string) => void, end: () => void }>()
  let live = false
  const watcher: RevocationWatcher = {
    revoked (hashes) {
      const event = `event: revoked\ndata: ${hashes.join(' ')}\n\n`
      for (const stream of streams) stream.write(event)
    },
    live () { live = true },
    interrupted () {
      live = false
      for (const stream of streams) stream.end()
    }
  }
  const stopWatching = revocations.watchRevocations(watcher)
  // preClose, not onClose: open streams would otherwise keep the server from closing.
  app.addHook('preClose', async () => {
    stopWatching()
    for (const stream of streams) stream.end()
  })

  app.get('/auth/revocations', {
    schema: {
      tags: ['operations'],
      summary: 'Server-sent events: hashes of tokens as they are ended',
      description: 'First event `ready`; then `revoked` events whose data is space-separated SHA-256 (base64url) token hashes. ' +
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
    const heartbeat = setInterval(() => { raw.write(': ping\n\n') }, heartbeatMs)
    heartbeat.unref()
    const stream = {
      write: (chunk: string) => { raw.write(chunk) },
      end: () => { raw.end() }
    }
    streams.add(stream)
    raw.once('close', () => {
      clearInterval(heartbeat)
      streams.delete(stream)
    })
    raw.write('event: ready\ndata: \n\n')
  })
  refuseOtherMethods(app, '/auth/revocations', ['GET'])
}
