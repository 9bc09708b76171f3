import closeWithGrace from 'close-with-grace'
import type { FastifyInstance } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import { buildApp } from './app.js'
import { startInternalListener } from './internal-listener.js'
import { revocationsOpen } from './internal-surfaces.js'
import { ConfigError, type Config } from '../config/config.js'
import type { EnsureResult } from '../core/accounts.js'
import { StatusError } from '../errors/status.js'
import { escapeControlCharacters } from '@auth-token-service/protocol/log-escape'
import { localUrl } from '../http/local-url.js'
import { tuneV8ForServing } from './v8-tuning.js'
import { LossyPersistenceError, undoesRevocations, type Persistence } from '../core/stores/redis/persistence.js'
import type { RedisTokenStore } from '../core/stores/redis/token-store.js'
import type { Tracing } from '../tracing/start.js'

/**
 * Creates the bootstrap account if the config names one and it does not exist yet; an
 * account that exists is left as it is, unless AUTH_BOOTSTRAP_RESET asks for its password back.
 */
export async function bootstrapAccount (app: FastifyInstance, config: Config): Promise<void> {
  if (config.bootstrapUsername === undefined || config.bootstrapPassword === undefined) return
  let result: EnsureResult
  try {
    result = await app.accounts.ensure(config.bootstrapUsername, config.bootstrapPassword, { reset: config.bootstrapReset })
  } catch (error) {
    // A name or password the rules refuse: the start stops on one line naming the variable and the rule.
    if (error instanceof StatusError && error.detail !== undefined) {
      throw new ConfigError(error.detail.startsWith('username') ? 'AUTH_BOOTSTRAP_USERNAME' : 'AUTH_BOOTSTRAP_PASSWORD', error.detail)
    }
    throw error
  }
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

/** The start's line on what a Redis restart can lose (an error while the service refuses to serve on it). */
function announcePersistence (app: FastifyInstance, persistence: Persistence, config: Config): void {
  const fields = { backend: 'redis', persistence: persistence.settings, canLose: persistence.canLose }
  if (!undoesRevocations(persistence)) app.log.info(fields, 'Redis persistence: a restart of it undoes no acknowledged revocation')
  else if (config.acceptLossyPersistence) app.log.warn(fields, 'Redis persistence can bring logged-out tokens back after a restart of it (AUTH_REDIS_ACCEPT_LOSSY_PERSISTENCE=true accepts this)')
  else app.log.error(fields, new LossyPersistenceError(persistence).message)
}

/** Tries every second until Redis answers, then announces; the store refuses a lossy one meanwhile by its own check. */
function announceWhenRead (app: FastifyInstance, tokens: RedisTokenStore, config: Config): void {
  const attempt = (): void => {
    tokens.persistence().then((persistence) => { announcePersistence(app, persistence, config) }, () => {
      if (!app.lifecycle.draining) setTimeout(attempt, 1000).unref()
    })
  }
  attempt()
}

export interface ServerOptions {
  /** Tracing, started before the app was imported (cli/main.ts); its spans are flushed last on close. */
  tracing?: Tracing | undefined
}

/**
 * The signals that start the shutdown. Each is handled here rather than by close-with-grace, which
 * exits 1 at once on a second signal: Ctrl-C in a terminal sends SIGINT to the whole process group,
 * npm included, and npm passes its own on to the server, so that under `npm start` one Ctrl-C
 * reached the server twice, and 5 runs of 5 exited 1 without the "closed" line, the request in
 * flight cut off. SIGQUIT and the rest are close-with-grace's, as before.
 */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const

/**
 * Runs `close` on the first stop signal or uncaught error, then exits: 0 once it is done, 1 after
 * an uncaught error or when it took more than SHUTDOWN_TIMEOUT_MS (the bound on everything, so a
 * repeated signal need not be one). A signal while closing changes nothing but is said, once, with
 * what does stop the process at once.
 */
function closeOnSignal (app: FastifyInstance, config: Config, close: () => Promise<void>): void {
  const grace = closeWithGrace({
    delay: config.shutdownTimeoutMs,
    logger: false,
    skip: [...STOP_SIGNALS],
    onTimeout: (delay) => { app.log.error({ shutdownTimeoutMs: delay }, 'the shutdown took longer than SHUTDOWN_TIMEOUT_MS: exiting 1 with requests unfinished') }
  }, async ({ err }) => {
    closing = true
    if (err !== undefined) app.log.error({ err }, 'closing after an uncaught error')
    await close()
  })
  let closing = false
  let repeatSaid = false
  const onStopSignal = (signal: NodeJS.Signals): void => {
    if (!closing) {
      closing = true
      app.log.info({ signal }, 'closing: readiness now answers 503')
      grace.close()
    } else if (!repeatSaid) {
      repeatSaid = true
      app.log.info({ signal, shutdownTimeoutMs: config.shutdownTimeoutMs },
        'closing already: a repeated signal changes nothing (requests in flight finish, then the process exits, within SHUTDOWN_TIMEOUT_MS of the first); SIGKILL stops it at once')
    }
  }
  for (const signal of STOP_SIGNALS) process.on(signal, onStopSignal)
}

/**
 * The process entry: build, bootstrap, listen. On SIGTERM/SIGINT: readiness answers 503
 * first (for SHUTDOWN_DELAY_MS, so load balancers stop sending), then the listener closes,
 * in-flight requests finish (SHUTDOWN_TIMEOUT_MS at most), and Redis and Postgres close last.
 */
export async function startServer (config: Config, options: ServerOptions = {}): Promise<FastifyInstance> {
  tuneV8ForServing()
  const app = await buildApp(config)
  let internal: FastifyInstance | undefined
  for (const warning of config.deprecated) app.log.warn(warning)
  if (config.revocationsKey === undefined && !revocationsOpen(config, config.internalHost)) {
    app.log.warn('AUTH_REVOCATIONS_KEY is not set and INTERNAL_HOST is not the loopback: the revocation feed is off, and guards in HTTP mode run without a cache')
  }
  if (config.publicInternals) {
    app.log.warn('AUTH_PUBLIC_INTERNALS=true: the public port serves /metrics, /docs, /openapi.json and the revocation feed too')
  }
  try {
    await bootstrapAccount(app, config)
    // Listening before Redis answers would turn the first requests into 503s; wait a little, then go on
    // (the service answers 503 until Redis is back, and recovers by itself).
    const answering = await app.backends.ready(5000)
    if (!answering) app.log.warn('Redis is not answering yet: token operations answer 503 until it does')
    const tokens = app.backends.tokens
    if (tokens.kind === 'redis') {
      const persistence = answering ? await tokens.persistence().catch(() => undefined) : undefined
      // A Redis whose restart can bring logged-out tokens back: the start stops on one line saying what to set.
      if (persistence !== undefined && undoesRevocations(persistence) && !config.acceptLossyPersistence) throw new LossyPersistenceError(persistence)
      if (persistence !== undefined) announcePersistence(app, persistence, config)
      // Not read yet: read once Redis answers; a lossy one is then refused (503, readiness "lossy") rather than the start.
      else announceWhenRead(app, tokens, config)
    }
    // The internal listener first (it needs the app ready, for its API document): once the public
    // port answers, everything does.
    await app.ready()
    internal = await startInternalListener(app, config)
    await app.listen({ host: config.host, port: config.port })
    // The embedded database's directory names its owner: a refused command says where it listens.
    await app.backends.database.dataDirLock?.announce({ url: localUrl(app.server.address()), internalUrl: localUrl(internal.server.address()) }).catch((error: unknown) => {
      // The socket still holds the directory; only the file that repeats where the service listens is stale.
      app.log.warn({ err: error }, 'could not record the listening address beside the embedded database')
    })
  } catch (error) {
    // A failed start (a taken port, say) closes what it opened, so the process exits with the error.
    await internal?.close()
    await app.close()
    throw error
  }
  closeOnSignal(app, config, async () => {
    app.lifecycle.draining = true
    if (config.shutdownDelayMs > 0) await sleep(config.shutdownDelayMs)
    await app.close()
    await internal?.close()
    await options.tracing?.shutdown().catch((error: unknown) => { app.log.warn({ err: error }, 'tracing: the last spans could not be exported') })
    app.log.info('closed')
  })
  return app
}
