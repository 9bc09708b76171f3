import type { FastifyRequest } from 'fastify'
import { noteRefusal } from '../../logging/refusal-log.js'
import { MALFORMED_AUTHORIZATION, presentedToken, TokenRefusal } from '@auth-token-service/protocol/token-source'
import { isApiKeyShaped } from '../api-key-secret.js'
import { refusalReason } from '../../http/token-refusal.js'
import { badRequest } from '../../errors/status.js'

/**
 * The token Authenticate, Logout and Login's refresh act on, in the contract's order
 * (the guard package's shared/token-source.ts), or undefined for none. A malformed Authorization header is a 400
 * with its detail; any other refusal (two AuthToken1 values) is no token at all, the
 * route answering as it does without one, and the access log says why.
 */
export function routeToken (request: FastifyRequest, options: { keys?: boolean } = {}): string | undefined {
  const presented = presentedToken(request)
  if (presented === undefined) return undefined
  if (presented instanceof TokenRefusal) {
    if (presented === MALFORMED_AUTHORIZATION) throw badRequest(refusalReason(presented))
    noteRefusal(request, refusalReason(presented))
    return undefined
  }
  // An API key is never taken from the AuthToken1 cookie (the contract: a key there is no credential): answered as no token.
  if (options.keys === true && presented.source === 'cookie' && isApiKeyShaped(presented.token)) return undefined
  return presented.token
}
