import fastifySwagger from '@fastify/swagger'
import fastifySwaggerUi from '@fastify/swagger-ui'
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify'
import type { Config } from '../config/config.js'
import { internalError, misdirected, notFound, StatusError } from '../errors/status.js'
import { statusErrorForHttp } from '../http/status-for-http.js'
import { internalListenerLogging } from '../logging/logging.js'
import { serverTimeouts } from '../http/server-timeouts.js'
import { MAX_PATH_SEGMENT, registerStrictJson } from '../http/parsing.js'
import { registerMetricsRoute } from '../metrics/route.js'
import { revocationRoutes } from '../core/routes/revocations.js'
import { docsLocation } from './pointer.js'
import { revocationsOpen } from './internal-surfaces.js'
import { allowedHosts } from '../http/allowed-hosts.js'
import { LOCAL_CLI_CREDENTIAL } from '../core/accounts.js'
import { adminApi } from './admin-api.js'
import { keyFingerprint, type AdminKey } from '../admin/admin-key.js'
import { generateLocalAdminKey, removeLocalAdminAccess, writeLocalAdminAccess } from '../admin/local-access.js'
import { openLoginLimiter } from './backends.js'
import { localUrl } from '../http/local-url.js'
import { sessionOwner } from '../sessions/session-owner.js'
import { docsTryOut } from './docs-try-out.js'

/**
 * The internal listener (INTERNAL_HOST:INTERNAL_PORT, 127.0.0.1:3001 by default): what only
 * the operator's side needs — /metrics, the API reference (/docs, /openapi.json) and the
 * revocation feed (/auth/revocations) — on an address that is not published; beside the
 * reference, the operations it describes, so that its "Try it out" works (docs-try-out.ts). The public port
 * serves none of them unless AUTH_PUBLIC_INTERNALS asks (NODE_ENV decides nothing here). It answers
 * only the Host names it is reached by (DNS rebinding), and nothing it answers is cached.
 */

export interface InternalAppOptions {
  /** A key the admin API also takes: the embedded default's, for the local command line (admin/local-access.ts). */
  localAdminKey?: string | undefined
}

/** The internal app over the main app's metrics, document and revocation feed. The main app must be ready (its document complete). */
export async function buildInternalApp (app: FastifyInstance, config: Config, options: InternalAppOptions = {}): Promise<FastifyInstance> {
  // The admin API's bodies are checked as sent: an unknown field is refused, not dropped unseen.
  const internal = Fastify({
    ...internalListenerLogging(app.log),
    // A slow client holds an internal connection no longer than a public one.
    http: serverTimeouts(config.requestTimeoutMs),
    requestTimeout: config.requestTimeoutMs,
    exposeHeadRoutes: false,
    return503OnClosing: false,
    // Path-style Login's segments, tried from /docs, are as long here as on the public port.
    routerOptions: { maxParamLength: MAX_PATH_SEGMENT },
    ajv: { customOptions: { removeAdditional: false } }
  })
  internal.setErrorHandler((error: FastifyError | StatusError, _request, reply) => {
    const status = error instanceof StatusError ? error : typeof error.statusCode === 'number' ? statusErrorForHttp(error.statusCode) : internalError()
    return reply.code(status.httpStatus).headers(status.headers).header('cache-control', 'no-store').send(status.toBody())
  })
  internal.setNotFoundHandler(async (_request, reply) => await reply.code(404).send(notFound().toBody()))
  // Admin bodies are JSON: raw invalid UTF-8 is refused as on the public port, never turned into U+FFFD.
  registerStrictJson(internal, config.bodyLimitBytes)
  // DNS rebinding: a page on a name pointed at this address sends that name as Host; it is
  // refused before any route, the feed's and the admin API's included.
  const hostAllowed = allowedHosts(config.internalHost, config.internalHostnames)
  internal.addHook('onRequest', async (request, reply) => {
    if (hostAllowed(request.headers.host)) return
    const refused = misdirected()
    await reply.code(refused.httpStatus).header('cache-control', 'no-store').send(refused.toBody())
  })
  // Metrics, the API document, admin answers: none is for a cache (the feed sets its own no-store).
  internal.addHook('onSend', async (_request, reply, payload) => {
    reply.header('cache-control', 'no-store')
    return payload
  })
  registerMetricsRoute(internal, app.metrics)
  // The public app's own document, as it stands: the reference describes the public operations.
  await internal.register(fastifySwagger, { mode: 'static', specification: { document: app.swagger() as never } })
  internal.get('/openapi.json', { logLevel: 'silent' }, async () => app.swagger())
  await internal.register(fastifySwaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true, tryItOutEnabled: false }, staticCSP: false })
  await internal.register(revocationRoutes, {
    revocations: app.backends.revocations,
    key: config.revocationsKey,
    open: revocationsOpen(config, config.internalHost),
    maxSubscribers: config.revocationsMaxSubscribers,
    onCut: (remoteAddress) => { app.log.warn({ remoteAddress }, 'revocation subscriber cut: its socket took nothing for too long') }
  })
  const { backends } = app
  const keys: AdminKey[] = []
  if (config.adminKey !== undefined) keys.push({ key: config.adminKey, credential: keyFingerprint(config.adminKey) })
  if (options.localAdminKey !== undefined) keys.push({ key: options.localAdminKey, credential: LOCAL_CLI_CREDENTIAL })
  await internal.register(adminApi, {
    prefix: '/admin',
    keys,
    accountsFor: app.accountsFor,
    apiKeys: app.apiKeys,
    webhooks: app.webhookOutbox,
    mail: app.mailOutbox,
    audit: backends.audit,
    limiter: openLoginLimiter(config, backends.tokens, 'admin:'),
    sessions: { sessions: app.sessions, accountOf: sessionOwner(backends.database) },
    // The provider's routes only while it is on: the contract has every OpenID route 404 when off.
    oidcClients: config.oidc === undefined ? undefined : app.oidcClients,
    signingKeys: app.signingKeys
  })
  // Last: the listener's own routes come first, and keep their paths.
  await internal.register(docsTryOut, { app, bodyLimitBytes: config.bodyLimitBytes })
  return internal
}

/** Builds and listens; the caller closes it (after the public app, so the feed outlives no request). */
export async function startInternalListener (app: FastifyInstance, config: Config): Promise<FastifyInstance> {
  // On the embedded database, a key of its own for the command line beside it, kept in the data
  // directory the service holds (mode 0600) and removed when the service closes.
  const embedded = app.backends.database.dataDirLock !== undefined
  const localAdminKey = embedded ? generateLocalAdminKey() : undefined
  const internal = await buildInternalApp(app, config, { localAdminKey })
  if (localAdminKey !== undefined) internal.addHook('onClose', async () => { await removeLocalAdminAccess(config.dataDir) })
  // Not Fastify's "Server listening at": that line names the public port, which scripts and people look for.
  await internal.listen({ host: config.internalHost, port: config.internalPort, listenTextResolver: (address) => `internal listener at ${address}` })
  const address = internal.server.address()
  const url = localUrl(address)
  if (localAdminKey !== undefined && url !== null) await writeLocalAdminAccess(config.dataDir, { url, key: localAdminKey })
  const port = typeof address === 'object' && address !== null ? address.port : config.internalPort
  app.log.info({ host: config.internalHost, port, docs: docsLocation(config.internalHost, port) },
    `internal listener: /metrics, /docs, /openapi.json, /auth/revocations${config.adminKey !== undefined || localAdminKey !== undefined ? ', /admin' : ''}`)
  return internal
}
