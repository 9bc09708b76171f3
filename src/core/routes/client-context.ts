import type { FastifyRequest } from 'fastify'
import type { ClientContext } from '../auth.js'

/** The client as the limits and the audit trail see it; `request.ip` honours only trusted proxies. */
export function clientOf (request: FastifyRequest): ClientContext {
  return { ip: request.ip, userAgent: request.headers['user-agent'] }
}
