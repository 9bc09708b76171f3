import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** Fastify's `genReqId`: the caller's `x-request-id` when it is a sane one, else a fresh UUID. */
export function requestId (request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
}
