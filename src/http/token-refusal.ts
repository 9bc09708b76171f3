import { TokenRefusal } from '@auth-token-service/protocol/token-source'
import { reasons, type Reason } from '../errors/reasons.js'

/** A refusal of the service's own (verify.ts's query token), with the reason it words. */
export class WordedRefusal extends TokenRefusal {
  readonly reason: Reason
  constructor (problem: TokenRefusal['problem'], reason: Reason) {
    super(problem)
    this.reason = reason
  }
}

/**
 * Why a presented token was refused, for the access log and a 400's detail. The token source
 * (shared with the guard's package, which has no reasons of the service) names only the kind
 * of problem; the words are the service's, from errors/reasons.ts like every other reason.
 */
export function refusalReason (refusal: TokenRefusal): Reason {
  if (refusal instanceof WordedRefusal) return refusal.reason
  switch (refusal.problem) {
    case 'malformed-authorization': return reasons.authorizationNotBearer()
    case 'ambiguous-cookie': return reasons.cookieGivenMoreThanOnce()
    case 'malformed-parameter': return reasons.notAString('token')
  }
}
