import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyInstance } from 'fastify'
import { createAccountAdmin, type AccountAdmin, type AdminActor } from '../core/accounts.js'
import type { AuditLog } from '../core/stores/audit-log.js'
import { createAuthService, type AuthService } from '../core/auth.js'
import { canLose, openBackends, openLoginLimiter, openPreSignInLimiter, openRecoveryLimits, type Backends } from './backends.js'
import type { Config } from '../config/config.js'
import { protectCookieRoutes } from '../http/cross-site.js'
import { answerClientError, answerFrameworkError, registerErrorHandlers } from '../http/errors.js'
import { serviceLogging, type LoggingOptions } from '../logging/logging.js'
import { MAX_PATH_SEGMENT, parseQuery, registerBodyParsing } from '../http/parsing.js'
import { everyRequest } from '../http/request-hook.js'
import { serverTimeouts } from '../http/server-timeouts.js'
import { publicServesInternals, revocationsOpen } from './internal-surfaces.js'
import { createMetrics, type Metrics } from '../metrics/metrics.js'
import { registerMetricsRoute } from '../metrics/route.js'
import { configuredPasswordPolicy, type PasswordPolicy } from '../passwords/policy.js'
import { authenticateRoutes } from '../core/routes/authenticate.js'
import { healthRoutes } from './health.js'
import { docsLocation, pointerRoutes } from './pointer.js'
import { introspectRoutes } from '../core/routes/introspect.js'
import { loginRoutes } from '../core/routes/login.js'
import { logoutRoutes } from '../core/routes/logout.js'
import { registerOpenApi, registerOpenApiRoutes } from './openapi.js'
import { passwordRoutes } from '../core/routes/password.js'
import { keyRoutes } from '../api-keys/routes.js'
import { revocationRoutes } from '../core/routes/revocations.js'
import { sessionRoutes } from '../sessions/routes.js'
import { createSqlSessions, type SqlSessions } from '../sessions/sql-sessions.js'
import { createApiKeys, type ApiKeys } from '../api-keys/api-keys.js'
import { verifyRoutes } from '../core/routes/verify.js'
import { signInRoutes } from '../sign-in/routes.js'
import { createSqlPasskeyStore } from '../sign-in/passkey-store.js'
import { createMemoryPendingStore, createRedisPendingStore } from '../sign-in/pending-store.js'
import { totpRoutes } from '../totp/routes.js'
import { createSecondFactor, type SecondFactor } from '../totp/second-factor.js'
import { totpKeySource } from '../totp/keys.js'
import type { TotpKeys } from '../totp/index.js'
import { PACKAGE_VERSION } from '../config/version.js'
import { createSqlDeviceRecord, loginDevices } from '../webhooks/devices.js'
import { createSqlWebhookOutbox, type WebhookOutbox } from '../webhooks/outbox.js'
import { startWebhookDelivery } from '../webhooks/start.js'
import { createOidcClients, createSigningKeys, createSqlSigningKeyStore, artifactStoreOf, clientRemovalsOf, endClientTokens, registerOidc, type OidcClients, type OidcServiceDeps, type SigningKeys } from '../oidc/index.js'
import { lifetimeSeconds } from '../core/auth.js'
import { createRecovery, createSqlMailOutbox, createSqlRecoveryStore, recoveryRoutes, startMailDelivery, type MailOutbox, type Recovery } from '../recovery/index.js'
import { mailBrand } from '../recovery/start.js'
import { tokenCookieOptions } from '../http/cookie.js'
import { consoleRoutes } from '../console/index.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The stores and services this app runs on (tests and the CLI reach them here). */
    backends: Backends
    auth: AuthService
    accounts: AccountAdmin
    /** The account operations acting as `actor` (the admin API's caller, the console's admin), for their audit events. */
    accountsFor: (actor: AdminActor) => AccountAdmin
    /** The accounts' sessions: the self-service routes and the admin API act through it. */
    sessions: SqlSessions
    /** API keys: the admin API, the self-service routes and the command line act through it. */
    apiKeys: ApiKeys
    /** TOTP: enrollment, its routes, and the check Login makes (through auth). */
    secondFactor: SecondFactor
    metrics: Metrics
    /** The webhook outbox: the admin API lists and retries its deliveries. */
    webhookOutbox: WebhookOutbox
    /**
     * The OpenID Connect provider's clients: the provider reads them (metadataOf); the admin API
     * and the command line register and remove them while the provider is on (config.oidc).
     */
    oidcClients: OidcClients
    /** The OpenID Connect provider's signing keys; undefined while it is off (no AUTH_OIDC_ISSUER). */
    signingKeys: SigningKeys | undefined
    /** Account recovery by email; undefined while mail is off (no AUTH_SMTP_URL). */
    recovery: Recovery | undefined
    /** The mail outbox: the admin API lists and retries its deliveries; undefined while mail is off. */
    mailOutbox: MailOutbox | undefined
    /** Shutdown state: once draining, readiness answers 503. */
    lifecycle: { draining: boolean }
  }
}

export interface BuildAppOptions extends LoggingOptions {
  /** Stores to use instead of those the config names; the app never closes what it was handed. */
  backends?: Backends
}

/** Trust the nearest `hops` proxies, as Fastify's numeric `trustProxy` does. */
function hopsTrusted (hops: number): (address: string, hop: number) => boolean {
  return (_address, hop) => hop < hops
}

/** The OpenID Connect provider on the public app, when AUTH_OIDC_ISSUER is set (after the sign-in pages it signs people in with). */
async function registerOidcProvider (app: FastifyInstance, config: Config, parts: Pick<OidcServiceDeps, 'audit' | 'store' | 'sealingKeys' | 'amrOf'>): Promise<void> {
  const { backends } = app
  if (config.oidc === undefined || app.signingKeys === undefined) return
  await registerOidc(app, {
    ...parts,
    config: config.oidc,
    tokens: backends.tokens,
    users: backends.users,
    clients: app.oidcClients,
    keyPrefix: config.redisKeyPrefix,
    signingKeys: app.signingKeys,
    onKeysError: (error) => { app.log.error({ err: error }, 'the OpenID Connect signing keys could not be read: the provider keeps the keys it has') },
    proxy: config.trustProxy !== false,
    issuedAt: (record) => Math.floor(record.expiresAt / 1000) - lifetimeSeconds(config, record.federated),
    revocations: backends.revocations,
    logout: app.auth.logout,
    cookie: tokenCookieOptions(config),
    pages: { title: config.signinTitle, redirectAllowed: config.redirectAllowed },
    log: app.log
  })
}

/** Account recovery by email, while AUTH_SMTP_URL is set: its mail worker (stopped on close) and the service the routes and the admin use. */
function startRecovery (app: FastifyInstance, config: Config, parts: {
  backends: Backends
  observed: Pick<Backends, 'audit' | 'hasher'>
  passwordPolicy: PasswordPolicy
  sessions: SqlSessions
  secondFactor: SecondFactor
  sealingKeys: () => Promise<TotpKeys>
  metrics: Metrics
}): { recovery: Recovery | undefined, mailOutbox: MailOutbox | undefined } {
  if (config.mail === undefined) return { recovery: undefined, mailOutbox: undefined }
  const { backends, observed, passwordPolicy, sessions, secondFactor, sealingKeys, metrics } = parts
  const mail = config.mail
  const mailOutbox = createSqlMailOutbox(backends.database)
  const worker = startMailDelivery(mail, { outbox: mailOutbox, keys: sealingKeys, brand: mailBrand(mail, config.signinTitle), log: app.log })
  app.addHook('onClose', async () => { await worker.stop() })
  const recovery = createRecovery({
    store: createSqlRecoveryStore(backends.database, () => { metrics.backendError('postgres') }),
    users: backends.users,
    tokens: backends.tokens,
    hasher: observed.hasher,
    audit: observed.audit,
    passwordPolicy,
    sessions,
    limiter: backends.limiter,
    secondFactor: {
      verify: async (account, otp, client) => (await secondFactor.verify(account, otp, { clientIp: client.ip, userAgent: client.userAgent })).kind === 'accepted'
    },
    keys: sealingKeys,
    limits: openRecoveryLimits(config, backends.tokens),
    resetTtlMs: mail.resetTtlMs,
    inviteTtlMs: mail.inviteTtlMs,
    onQueued: worker.nudge,
    onBackgroundError: (error) => { app.log.warn({ err: { message: error instanceof Error ? error.message : String(error) } }, 'a password reset request could not be handled: no mail was queued for it') }
  })
  // Runs before the worker stops (onClose hooks run last-registered first): requests answered get their mail queued.
  app.addHook('onClose', async () => { await recovery.settled() })
  return { recovery, mailOutbox }
}

/** The admin console: the same operations as the admin API (app.accountsFor), acting as the signed-in admin. */
async function registerConsole (app: FastifyInstance, config: Config, deps: { auth: AuthService, sessions: SqlSessions, apiKeys: ApiKeys, audit: AuditLog, webhooks: WebhookOutbox | undefined }): Promise<void> {
  await app.register(consoleRoutes, {
    ...deps,
    config,
    accountsFor: app.accountsFor,
    mail: app.mailOutbox,
    oidcClients: config.oidc === undefined ? undefined : app.oidcClients
  })
}

/**
 * The app without a listening socket: the HTTP edge (http/), the backends, and the
 * operations. The process entry (server.ts) listens; tests inject.
 */
export async function buildApp (config: Config, options: BuildAppOptions = {}): Promise<FastifyInstance> {
  const logging = serviceLogging(config, options)
  // Metrics read the backends lazily, so they exist first and can count the backends' errors.
  let sources: Backends | undefined
  const webhooksOn = config.webhooks !== undefined
  let outbox: WebhookOutbox | undefined
  const metrics = createMetrics({
    webhookDeliveries: webhooksOn ? async () => await outbox?.counts() : undefined,
    hashQueueDepth: () => sources?.hasher.queueDepth() ?? 0,
    auditDropped: () => sources?.audit.dropped() ?? 0,
    logLinesDropped: logging.droppedLines,
    keysExpiringSoon: async () => sources === undefined ? 0 : await sources.apiKeyStore.countExpiring(7 * 86_400_000)
  })
  const app = Fastify({
    ...logging.fastifyOptions(metrics.observeRequest),
    // A request without Host is answered like any other bad request (our body, not Node's empty 400).
    // The request timeout holds for a client that sends its headers slowly too (server-timeouts.ts).
    http: { requireHostHeader: false, ...serverTimeouts(config.requestTimeoutMs) },
    bodyLimit: config.bodyLimitBytes,
    requestTimeout: config.requestTimeoutMs,
    trustProxy: typeof config.trustProxy === 'number' ? hopsTrusted(config.trustProxy) : config.trustProxy,
    exposeHeadRoutes: false,
    // While closing, requests already on open connections are served, not refused.
    return503OnClosing: false,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PATH_SEGMENT, querystringParser: parseQuery },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: (error, socket) => { answerClientError(app.log, error, socket) }
  }).withTypeProvider<TypeBoxTypeProvider>()

  const ownBackends = options.backends === undefined
  const backends = options.backends ?? await openBackends(config, app.log, metrics.backendError)
  sources = backends
  if (ownBackends) app.addHook('onClose', async () => { await backends.close() })
  const observed = { ...backends, audit: metrics.countEvents(backends.audit), hasher: metrics.timeHashing(backends.hasher) }
  const passwordPolicy = configuredPasswordPolicy(config.passwordMinLength)
  const sessions = createSqlSessions({ db: backends.database, tokens: backends.tokens, audit: observed.audit, onError: () => { metrics.backendError('postgres') } })
  const apiKeys = createApiKeys({ store: backends.apiKeyStore, tokens: backends.tokens, audit: observed.audit, maxDays: config.apiKeyMaxDays, maxPerAccount: config.apiKeysPerAccount })
  app.addHook('onClose', async () => { await apiKeys.close() })
  // One resolution of the sealing keys (a key file is made at most once): TOTP secrets and the provider's signing keys.
  const sealingKeys = totpKeySource(config, app.log)
  const secondFactor = createSecondFactor({
    store: backends.totp,
    audit: observed.audit,
    keys: sealingKeys,
    issuer: config.totpIssuer,
    onUnreadable: (accountId) => { app.log.error({ accountId }, 'a TOTP secret does not open with AUTH_TOTP_KEY (or AUTH_TOTP_PREVIOUS_KEYS): its account cannot pass the second factor') }
  })
  outbox = createSqlWebhookOutbox(backends.database)
  const auth = createAuthService({ ...observed, config, sessions, passwordPolicy, apiKeys, keyHashes: apiKeys, secondFactor, devices: webhooksOn ? loginDevices(createSqlDeviceRecord(backends.database)) : undefined })
  if (config.webhooks !== undefined) {
    const delivery = startWebhookDelivery(config.webhooks, { outbox, signal: backends.webhookRows, log: app.log, metrics })
    // onClose hooks run last-registered first: the worker stops before the database closes under it.
    app.addHook('onClose', async () => { await delivery.stop() })
  }
  const { recovery, mailOutbox } = startRecovery(app, config, { backends, observed, passwordPolicy, sessions, secondFactor, sealingKeys, metrics })
  app.decorate('backends', backends)
  app.decorate('auth', auth)
  // One assembly of the account operations for every adapter: the app's own, the admin API's, the console's.
  const accountsFor = (actor?: AdminActor): AccountAdmin => createAccountAdmin({ ...observed, actor, passwordPolicy, apiKeys, keyHashes: apiKeys, invitations: recovery })
  app.decorate('accountsFor', accountsFor)
  app.decorate('accounts', accountsFor())
  app.decorate('recovery', recovery)
  app.decorate('mailOutbox', mailOutbox)
  app.decorate('apiKeys', apiKeys)
  app.decorate('secondFactor', secondFactor)
  app.decorate('sessions', sessions)
  app.decorate('metrics', metrics)
  app.decorate('webhookOutbox', outbox)
  const oidcArtifacts = artifactStoreOf(backends.tokens)
  app.decorate('oidcClients', createOidcClients({
    store: backends.oidcClientStore,
    audit: observed.audit,
    onRemoved: config.oidc === undefined ? undefined : endClientTokens(backends.tokens, config.redisKeyPrefix, oidcArtifacts),
    removals: config.oidc === undefined ? undefined : clientRemovalsOf(backends.tokens, config.redisKeyPrefix, oidcArtifacts)
  }))
  app.decorate('signingKeys', config.oidc === undefined
    ? undefined
    : createSigningKeys({
      store: createSqlSigningKeyStore(backends.database),
      sealing: sealingKeys,
      idTokenTtlSeconds: config.oidc.idTokenTtlSeconds,
      onUnreadable: (kid) => { app.log.warn({ kid }, 'a retired OpenID Connect signing key does not open with AUTH_TOTP_KEY (or AUTH_TOTP_PREVIOUS_KEYS): left out of the JWKS') }
    }))
  app.decorate('lifecycle', { draining: false })

  app.addHook('onRequest', everyRequest)
  registerErrorHandlers(app)
  await registerBodyParsing(app, config.bodyLimitBytes)
  await registerOpenApi(app, PACKAGE_VERSION)
  // Before the routes: it adds its check to Login's and Logout's as they are registered.
  protectCookieRoutes(app, config.allowedOrigins)
  await app.register(loginRoutes, { auth, config })
  await app.register(authenticateRoutes, { auth })
  await app.register(logoutRoutes, { auth, config })
  await app.register(sessionRoutes, { auth, sessions, config })
  await app.register(passwordRoutes, { auth })
  await app.register(keyRoutes, { auth, apiKeys })
  await app.register(totpRoutes, { auth, secondFactor, users: backends.users })
  await app.register(verifyRoutes, { auth, trustProxy: config.trustProxy, originalUriHeader: config.originalUriHeader })
  await app.register(signInRoutes, {
    auth,
    config,
    sessions,
    passkeys: createSqlPasskeyStore(backends.database, () => { metrics.backendError('postgres') }),
    pending: backends.tokens.kind === 'redis' ? createRedisPendingStore(backends.tokens.redis, config.redisKeyPrefix) : createMemoryPendingStore(),
    preSignIn: openPreSignInLimiter(config, backends.tokens),
    // The code step's check is Login's own (a code accepted once, a recovery code spent).
    secondFactor: {
      verify: async (account, otp, client) => (await secondFactor.verify(account, otp, { clientIp: client.ip, userAgent: client.userAgent })).kind === 'accepted'
    },
    account: { apiKeys, secondFactor, users: backends.users }
  })
  if (recovery !== undefined && config.mail !== undefined) {
    await app.register(recoveryRoutes, {
      recovery,
      preSignIn: openPreSignInLimiter(config, backends.tokens),
      signinTitle: config.signinTitle,
      redirectAllowed: config.redirectAllowed,
      resetTtlMs: config.mail.resetTtlMs
    })
  }
  await registerOidcProvider(app, config, { audit: observed.audit, store: oidcArtifacts, sealingKeys, amrOf: sessions.amrOf })
  if (config.consoleOn) await registerConsole(app, config, { auth, sessions, apiKeys, audit: observed.audit, webhooks: config.webhooks === undefined ? undefined : outbox })
  await app.register(introspectRoutes, { auth, config, limiter: openLoginLimiter(config, backends.tokens, 'introspect:'), audit: observed.audit })
  // The public port serves the internal surfaces only when AUTH_PUBLIC_INTERNALS asks for it.
  const internals = publicServesInternals(config)
  if (internals) {
    await app.register(revocationRoutes, {
      revocations: backends.revocations,
      key: config.revocationsKey,
      open: revocationsOpen(config, config.host),
      maxSubscribers: config.revocationsMaxSubscribers
    })
  }
  await app.register(healthRoutes, {
    tokens: backends.tokens,
    database: backends.database,
    names: { tokens: backends.tokens.kind, database: backends.database.kind },
    draining: () => app.lifecycle.draining,
    timeoutMs: config.healthTimeoutMs,
    canLose: () => canLose(backends.tokens)
  })
  await app.register(pointerRoutes, { version: PACKAGE_VERSION, docs: docsLocation(config.internalHost, config.internalPort) })
  if (internals) {
    registerMetricsRoute(app, metrics)
    await registerOpenApiRoutes(app)
  }
  return app
}
