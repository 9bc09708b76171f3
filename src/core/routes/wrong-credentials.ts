import type { FastifyRequest } from 'fastify'
import { tooManyRequests } from '../../errors/status.js'
import type { AuditEventName, AuditLog } from '../stores/audit-log.js'
import type { LoginLimiter } from '../stores/login-limiter.js'

export interface WrongCredentialsCounter {
  limiter: LoginLimiter
  audit: AuditLog
  event: AuditEventName
  /** The audit outcome of a wrong credential; `-limited` is added when the address is locked. */
  outcome: string
}

/**
 * Presented-but-wrong credentials of a machine client (the admin key, introspection's Basic
 * secret), counted towards a lock of the client address and audited. Throws 429 when the
 * address is locked (attempts while locked extend nothing) or this attempt locks it; returns when
 * the caller should answer its own 401. The right credentials and none at all never come here.
 */
export async function countWrongCredentials (request: FastifyRequest, { limiter, audit, event, outcome }: WrongCredentialsCounter): Promise<void> {
  const ip = request.ip
  const userAgent = request.headers['user-agent']
  const verdict = await limiter.check(ip, ip)
  if (!verdict.allowed) {
    audit.record({ event, clientIp: ip, userAgent, outcome: `${outcome}-limited` })
    throw tooManyRequests(verdict.retryAfterMs / 1000)
  }
  const failure = await limiter.recordFailure(ip, ip)
  audit.record({ event, clientIp: ip, userAgent, outcome })
  if (!failure.counted) throw tooManyRequests(failure.retryAfterMs / 1000)
}
