import type { Reason } from '../errors/reasons.js'

/**
 * Why a request was refused, for its access-log line only: a 403 or 401 answer says nothing
 * (unknown, ended and ambiguous tokens look alike to the caller), but whoever reads the log
 * should see a tossed cookie for what it was. Weak: gone with the request.
 */
const REASONS = new WeakMap<object, Reason>()

export function noteRefusal (request: object, reason: Reason): void {
  REASONS.set(request, reason)
}

export function refusalOf (request: object): Reason | undefined {
  return REASONS.get(request)
}
