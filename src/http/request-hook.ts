import type { onRequestHookHandler } from 'fastify'
import { reasons } from '../errors/reasons.js'
import { hasSeveralHosts } from './host-header.js'
import { refusedQuery } from './parsing.js'
import { badRequest } from '../errors/status.js'

/**
 * The one hook every request runs: the headers every answer carries, then the refusals the
 * router could not make. Synchronous, callback-style: an async hook costs a promise and a
 * microtask turn per request, for work that never waits.
 */
export const everyRequest: onRequestHookHandler = (request, reply, done) => {
  // Tokens and legacy credentials travel in URLs: nothing may cache or refer them onward.
  reply
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .header('x-request-id', request.id)
  const refused = refusedQuery(request.query)
  // A route that reads its query itself (forward-auth: the query is the protected upstream's) says so in its config.
  if (refused !== undefined && request.routeOptions.config.ownQuery !== true) done(badRequest(refused))
  // HTTP/1.1 requires Host (RFC 9112 §3.2); answered with our 400 rather than Node's empty one.
  else if (request.headers.host === undefined && request.raw.httpVersion === '1.1') done(badRequest(reasons.hostRequired()))
  else if (hasSeveralHosts(request.raw.rawHeaders)) done(badRequest(reasons.hostGivenMoreThanOnce()))
  else done()
}
