import closeWithGrace from 'close-with-grace'
import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.js'
import type { Config } from './config.js'

/** Creates or updates the bootstrap account, if the config names one. */
export async function bootstrapAccount (app: FastifyInstance, config: Config): Promise<void> {
  if (config.bootstrapUsername === undefined || config.bootstrapPassword === undefined) return
  const result = await app.accounts.ensure(config.bootstrapUsername, config.bootstrapPassword)
  const what = result.created ? 'created' : result.changed ? 'password updated' : 'unchanged'
  app.log.info({ username: result.account.username }, `bootstrap account ${what}`)
}

/**
 * The process entry: build, bootstrap, listen, and on SIGTERM/SIGINT stop
 * accepting, let in-flight requests finish, then close Redis and Postgres.
 */
export async function startServer (config: Config): Promise<FastifyInstance> {
  const app = await buildApp(config)
  try {
    await bootstrapAccount(app, config)
  } catch (error) {
    await app.close()
    throw error
  }
  // Listening before Redis answers would turn the first requests into 503s; wait a little, then go on
  // (the service answers 503 until Redis is back, and recovers by itself).
  if (app.backends.ready !== undefined && !await app.backends.ready(5000)) {
    app.log.warn('Redis is not answering yet: token operations answer 503 until it does')
  }
  closeWithGrace({ delay: 10_000, logger: false }, async ({ signal, err }) => {
    if (err !== undefined) app.log.error({ err }, 'closing after an uncaught error')
    else app.log.info({ signal }, 'closing')
    await app.close()
  })
  await app.listen({ host: config.host, port: config.port })
  return app
}
