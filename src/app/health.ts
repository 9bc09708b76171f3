import type { FastifyPluginAsync } from 'fastify'
import type { Database } from '../db/database.js'
import type { TokenStore } from '../core/stores/token-store.js'
import { UnavailableError } from '../errors/status.js'
import { EvictionPolicyError } from '../core/stores/redis/eviction.js'
import { LossyPersistenceError } from '../core/stores/redis/persistence.js'
import { refuseOtherMethods } from '../http/methods.js'
import { withTimeout } from '@auth-token-service/protocol/time-limit'

export interface HealthRoutesOptions {
  tokens: TokenStore
  database: Database
  /** How the checks are named in the answer: `redis` / `postgres`, or the embedded `in-process` / `pglite`. */
  names: { tokens: string, database: string }
  /** True once shutdown began: readiness fails first, so load balancers stop sending. */
  draining: () => boolean
  timeoutMs: number
  /** What a restart of the token store can lose, in words (undefined: not known yet): the answer's `durability`. */
  canLose: () => string | undefined
}

/**
 * `evicting`: Redis answers but may evict keys (core/stores/redis/eviction.ts); `lossy`: it answers but
 * a restart of it could bring ended tokens back (core/stores/redis/persistence.ts). The service refuses
 * to serve on either.
 */
type CheckResult = 'ok' | 'down' | 'evicting' | 'lossy'

function failed (error: unknown): CheckResult {
  if (!(error instanceof UnavailableError)) return 'down'
  if (error.cause instanceof EvictionPolicyError) return 'evicting'
  return error.cause instanceof LossyPersistenceError ? 'lossy' : 'down'
}

async function check (work: () => Promise<unknown>, timeoutMs: number): Promise<CheckResult> {
  return await withTimeout(work().then((): CheckResult => 'ok', failed), timeoutMs, (): CheckResult => 'down')
}

/**
 * /health/live: the process answers. /health/ready: Redis and Postgres answer within
 * a short timeout, and the instance is not shutting down. Both are cheap enough to be
 * polled every second and are left out of the access log.
 */
export const healthRoutes: FastifyPluginAsync<HealthRoutesOptions> = async (app, options) => {
  app.get('/health/live', {
    logLevel: 'silent',
    schema: { tags: ['operations'], summary: 'Liveness: the process answers' }
  }, async () => ({ status: 0, message: 'Success' }))
  app.get('/health/ready', {
    logLevel: 'silent',
    schema: { tags: ['operations'], summary: 'Readiness: Redis and Postgres answer and the instance is not shutting down (else 503, naming what failed)' }
  }, async (_request, reply) => {
    const [tokens, database] = await Promise.all([
      check(async () => { await options.tokens.ping() }, options.timeoutMs),
      check(async () => await options.database.query('SELECT 1'), options.timeoutMs)
    ])
    const draining = options.draining()
    const ready = tokens === 'ok' && database === 'ok' && !draining
    return await reply.code(ready ? 200 : 503).send({
      status: ready ? 0 : 503,
      message: ready ? 'Success' : 'Service Unavailable',
      checks: { [options.names.tokens]: tokens, [options.names.database]: database, accepting: draining ? 'no' : 'yes' },
      durability: { [options.names.tokens]: options.canLose() ?? 'not known yet' }
    })
  })
  refuseOtherMethods(app, '/health/live', ['GET'])
  refuseOtherMethods(app, '/health/ready', ['GET'])
}
