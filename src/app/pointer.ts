import type { FastifyPluginAsync } from 'fastify'
import { refuseOtherMethods } from '../http/methods.js'

export interface PointerOptions {
  version: string
  /** Where a person finds the docs page: a URL when the internal listener is on loopback, else a hint. */
  docs: string
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '::1', 'localhost'])

/** Where `/docs` is, for the start log and `GET /`: the internal listener serves it. */
export function docsLocation (internalHost: string, internalPort: number): string {
  if (LOOPBACK_HOSTS.has(internalHost)) {
    return `http://${internalHost === '::1' ? '[::1]' : internalHost}:${internalPort}/docs (the internal listener, from this host)`
  }
  return `/docs on the internal listener (INTERNAL_HOST, port ${internalPort})`
}

/**
 * `GET /` on the public port: a short pointer instead of a bare 404 for someone who opens the
 * service in a browser or with curl first. It names nothing secret; the version is
 * the package's, as `/openapi.json` says it too.
 */
export const pointerRoutes: FastifyPluginAsync<PointerOptions> = async (app, options) => {
  const body = {
    status: 0,
    message: 'Success',
    service: 'auth-token-service',
    version: options.version,
    docs: options.docs,
    // A person who opens the service in a browser most likely came to sign in.
    signin: '/auth/signin',
    health: { live: '/health/live', ready: '/health/ready' }
  }
  app.get('/', {
    logLevel: 'silent',
    schema: { tags: ['operations'], summary: 'A pointer: the service, its version, where its docs, sign-in page and health checks are' }
  }, async () => body)
  refuseOtherMethods(app, '/', ['GET'])
}
