import closeWithGrace from 'close-with-grace'
import Fastify, { type FastifyInstance } from 'fastify'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { buildApp } from './app.js'
import { registerMetricsRoute } from './metrics/route.js'
import type { Config } from './config.js'
import { escapeControlCharacters } from './http/log-escape.js'
import { tuneV8ForServing } from './v8-tuning.js'

/**
 * Creates the bootstrap account if the config names one and it does not exist yet; an
 * account that exists is left as it is, unless AUTH_BOOTSTRAP_RESET asks for its password back.
 */
export async function bootstrapAccount (app: FastifyInstance, config: Config): Promise<void> {
  if (config.bootstrapUsername === undefined || config.bootstrapPassword === undefined) return
  const result = await app.accounts.ensure(config.bootstrapUsername, config.bootstrapPassword, { reset: config.bootstrapReset })
  const username = escapeControlCharacters(result.account.username)
  switch (result.outcome) {
    case 'created':
      app.log.info({ username }, 'bootstrap account created')
      break
    case 'exists':
      app.log.info({ username }, 'bootstrap account exists, left as it is (AUTH_BOOTSTRAP_RESET=true would reset its password)')
      break
    case 'reset':
      app.log.warn({ username, tokensEnded: result.ended },
        'bootstrap account password reset (AUTH_BOOTSTRAP_RESET=true); its tokens ended. Unset AUTH_BOOTSTRAP_RESET, or every start resets it again')
      break
  }
}

/** Where this machine reaches a listener: a wildcard address is reached on the loopback. */
function localUrl (address: string | AddressInfo | null): string | null {
  if (address === null || typeof address === 'string') return null
  const host = address.address === '0.0.0.0' ? '127.0.0.1' : address.address === '::' ? '::1' : address.address
  return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`
}

/** /metrics alone on its own port, so it need never be public. */
async function startMetricsServer (app: FastifyInstance, config: Config): Promise<FastifyInstance> {
  const server = Fastify({ logger: false, exposeHeadRoutes: false })
  registerMetricsRoute(server, app.metrics)
  await server.listen({ host: config.host, port: config.metricsPort ?? 0 })
  app.log.info({ port: config.metricsPort }, 'metrics listening on their own port')
  return server
}

/**
 * The process entry: build, bootstrap, listen. On SIGTERM/SIGINT: readiness answers 503
 * first (for SHUTDOWN_DELAY_MS, so load balancers stop sending), then the listener closes,
 * in-flight requests finish (SHUTDOWN_TIMEOUT_MS at most), and Redis and Postgres close last.
 */
export async function startServer (config: Config): Promise<FastifyInstance> {
  tuneV8ForServing()
  const app = await buildApp(config)
  let metricsServer: FastifyInstance | undefined
  try {
    await bootstrapAccount(app, config)
    // Listening before Redis answers would turn the first requests into 503s; wait a little, then go on
    // (the service answers 503 until Redis is back, and recovers by itself).
    if (!await app.backends.ready(5000)) {
      app.log.warn('Redis is not answering yet: token operations answer 503 until it does')
    }
    if (config.metricsPort !== undefined) metricsServer = await startMetricsServer(app, config)
    await app.listen({ host: config.host, port: config.port })
    // The embedded database's directory names its owner: a refused command says where it listens.
    await app.backends.database.dataDirLock?.announce({ url: localUrl(app.server.address()) }).catch((error: unknown) => {
      // The socket still holds the directory; only the file that repeats where the service listens is stale.
      app.log.warn({ err: error }, 'could not record the listening address beside the embedded database')
    })
  } catch (error) {
    // A failed start (a taken port, say) closes what it opened, so the process exits with the error.
    await metricsServer?.close()
    await app.close()
    throw error
  }
  closeWithGrace({ delay: config.shutdownTimeoutMs, logger: false }, async ({ signal, err }) => {
    if (err !== undefined) app.log.error({ err }, 'closing after an uncaught error')
    else app.log.info({ signal }, 'closing: readiness now answers 503')
    app.lifecycle.draining = true
    if (config.shutdownDelayMs > 0) await sleep(config.shutdownDelayMs)
    await app.close()
    await metricsServer?.close()
    app.log.info('closed')
  })
  return app
}
