import type { FastifyInstance, HTTPMethods } from 'fastify'
import { methodNotAllowed } from '../errors/status.js'

/**
 * Answers every method but `allowed` on `url` with 405 and an `Allow` header, so a
 * wrong method is told what would work instead of getting a 404.
 */
export function refuseOtherMethods (app: FastifyInstance, url: string, allowed: readonly HTTPMethods[]): void {
  const others = app.supportedMethods.filter((method) => !allowed.includes(method as HTTPMethods))
  const error = methodNotAllowed(allowed)
  app.route({
    method: others,
    url,
    schema: { hide: true },
    handler: async () => { throw error }
  })
}
