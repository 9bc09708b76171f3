import type { FastifyInstance, FastifyPluginAsync, HTTPMethods, InjectOptions } from 'fastify'
import { reasons } from '../errors/reasons.js'
import { badRequest, StatusError } from '../errors/status.js'
import { hasSeveralHosts } from '../http/host-header.js'

/**
 * The public operations on the internal listener, so that /docs's "Try it out" works where the
 * reference is served. Swagger UI sends to the page's own origin; from the internal listener's
 * page a call to the public port would be cross-origin (refused by the cross-site rule, and
 * unreadable without CORS), and the AuthToken1 cookie Login sets would not count there. Here
 * each operation the reference lists is handed, as it came, to the public app itself: the same
 * routes, limits, cross-site rule (the page's own origin is this listener's; any other origin
 * is refused as on the public port), events and answers, byte for byte.
 */

export interface TryOutOptions {
  /** The public app, ready: its document names the operations, and it answers them. */
  app: FastifyInstance
  bodyLimitBytes: number
}

/**
 * Headers not handed on: those of one connection, the length (recomputed), and those only a
 * trusted proxy may set. This listener is no proxy hop the public app trusts (AUTH_TRUST_PROXY
 * may name loopback, for a proxy on this host): the app sees the caller's own address.
 */
const NOT_HANDED_ON = new Set(['connection', 'keep-alive', 'transfer-encoding', 'te', 'upgrade', 'proxy-connection',
  'content-length', 'forwarded', 'x-real-ip', 'x-original-uri'])
const NOT_ANSWERED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'date'])

/** The reference's paths, in the router's form (`{token}` → `:token`). */
export function documentedPaths (document: unknown): string[] {
  const paths = typeof document === 'object' && document !== null && 'paths' in document ? document.paths : undefined
  if (typeof paths !== 'object' || paths === null) return []
  return Object.keys(paths).map((path) => path.replace(/\{([^}]+)\}/g, ':$1'))
}

const closing = (): StatusError => new StatusError(503, 'Service Unavailable', 503)

export const docsTryOut: FastifyPluginAsync<TryOutOptions> = async (internal, { app, bodyLimitBytes }) => {
  // Bodies go on as the bytes that came: the public app parses them, and refuses what it refuses.
  internal.removeAllContentTypeParsers()
  internal.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: bodyLimitBytes }, (_request, body, done) => { done(null, body) })
  const methods = internal.supportedMethods as HTTPMethods[]
  for (const path of documentedPaths(app.swagger())) {
    // The listener's own surfaces (documented too when AUTH_PUBLIC_INTERNALS is set) stay its own.
    if (methods.some((method) => internal.hasRoute({ method, url: path }))) continue
    // Every method, so that a wrong one gets the public app's 405 and its Allow header.
    const urls = path === '/' ? [path] : [path, `${path}/`]
    for (const url of urls) {
      internal.route({
        method: methods,
        url,
        handler: async (request, reply) => {
          if (hasSeveralHosts(request.raw.rawHeaders)) throw badRequest(reasons.hostGivenMoreThanOnce())
          const headers: Record<string, string | string[]> = {}
          for (const [name, value] of Object.entries(request.headers)) {
            if (value !== undefined && !NOT_HANDED_ON.has(name) && !name.startsWith('x-forwarded-')) headers[name] = value
          }
          const body = Buffer.isBuffer(request.body) ? request.body : undefined
          const injected: InjectOptions = {
            method: request.method as InjectOptions['method'],
            url: request.url,
            headers,
            remoteAddress: request.socket.remoteAddress
          }
          if (body !== undefined) injected.payload = body
          let answer
          try {
            answer = await app.inject(injected)
          } catch {
            // The public app closes first at shutdown: what comes in between is told to come back.
            throw closing()
          }
          reply.code(answer.statusCode)
          for (const [name, value] of Object.entries(answer.headers)) {
            if (value !== undefined && !NOT_ANSWERED.has(name)) reply.header(name, value)
          }
          return await reply.send(answer.rawPayload)
        }
      })
    }
  }
}
