import type { FastifyInstance } from 'fastify'
import { refuseOtherMethods } from '../http/methods.js'
import type { Metrics } from './metrics.js'

/** GET /metrics in Prometheus' text format; on the internal listener, and on the main app only with AUTH_PUBLIC_INTERNALS=true. */
export function registerMetricsRoute (app: FastifyInstance, metrics: Metrics): void {
  app.get('/metrics', {
    logLevel: 'silent',
    schema: { tags: ['operations'], summary: 'Prometheus metrics (text exposition format)' }
  }, async (_request, reply) => {
    return await reply.type(metrics.registry.contentType).send(await metrics.exposition())
  })
  refuseOtherMethods(app, '/metrics', ['GET'])
}
