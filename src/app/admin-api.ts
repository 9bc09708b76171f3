import { webhookRoutes } from '../webhooks/admin-routes.js'
import type { WebhookOutbox } from '../webhooks/outbox.js'
import { mailAdminRoutes, type MailOutbox } from '../recovery/index.js'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import type { AccountAdmin, AdminActor } from '../core/accounts.js'
import { reasons } from '../errors/reasons.js'
import { notFound, StatusError } from '../errors/status.js'
import type { AuditLog } from '../core/stores/audit-log.js'
import type { LoginLimiter } from '../core/stores/login-limiter.js'
import { countWrongCredentials } from '../core/routes/wrong-credentials.js'
import { adminKeyCheck, bearerCredential, type AdminKey } from '../admin/admin-key.js'
import { adminError } from '../admin/errors.js'
import { eventRoutes } from '../admin/event-routes.js'
import { createAdminDocument } from '../admin/openapi.js'
import { sessionRoutes, type SessionRoutesOptions } from '../sessions/admin-routes.js'
import { userRoutes } from '../admin/user-routes.js'
import { totpAdminRoutes } from '../totp/admin-routes.js'
import { groupAdminRoutes } from '../groups/index.js'
import { keyRoutes } from '../api-keys/admin-routes.js'
import type { ApiKeys } from '../api-keys/api-keys.js'
import { clientAdminRoutes, signingKeyAdminRoutes, type OidcClients, type SigningKeys } from '../oidc/index.js'

/**
 * The admin API (api-contract.md, "Admin API"), registered under /admin on the internal
 * listener. Off (every /admin route 404, as if absent) when no key is configured. Each request
 * needs `Authorization: Bearer <key>`; a missing or wrong key is a 401. Wrong keys are counted
 * per client address by the login limiter's rules in a namespace of its own (backends.ts
 * openLoginLimiter), so a guessing client is refused (429) like one guessing passwords; the right
 * key is never refused.
 */

export interface AdminApiOptions {
  /** The keys that open it: AUTH_ADMIN_KEY, and the local key of the embedded default (local-access.ts). None: off. */
  keys: readonly AdminKey[]
  /** The account administration acting for a caller: its changes are recorded with the caller's address, user agent and credential. */
  accountsFor: (actor: AdminActor) => AccountAdmin
  audit: AuditLog
  /** The admin namespace's limiter: its "account" is the client address. */
  limiter: LoginLimiter
  /** API keys; absent: no key routes (404). */
  apiKeys?: ApiKeys | undefined
  /** The webhook outbox: its deliveries listed and retried; absent: no webhook routes (404). */
  webhooks?: WebhookOutbox | undefined
  /** The mail outbox: its deliveries listed and retried; absent (mail off): no mail routes (404). */
  mail?: MailOutbox | undefined
  /** The session routes' parts; absent: no session routes (404). */
  sessions?: Pick<SessionRoutesOptions, 'sessions' | 'accountOf'> | undefined
  /** The OpenID Connect provider's clients; absent: the provider is off, and its routes answer 404 saying so. */
  oidcClients?: OidcClients | undefined
  /** The OpenID Connect provider's signing keys; absent: the provider is off (its routes 404, saying so). */
  signingKeys?: SigningKeys | undefined
}

/** Who is named in the audit trail as making the admin API's changes. */
export const ADMIN_API_ACTOR = 'admin-api'

const unauthorized = (missing: boolean): StatusError =>
  new StatusError(401, 'Unauthorized', 401, { 'www-authenticate': 'Bearer realm="admin"' },
    { detail: missing ? reasons.adminKeyRequired() : reasons.adminKeyWrong() })

export const adminApi: FastifyPluginAsyncTypebox<AdminApiOptions> = async (app, { keys, accountsFor, audit, limiter, sessions, apiKeys, webhooks, mail, oidcClients, signingKeys }) => {
  // Off: nothing registered, so the listener's own 404 answers every /admin path alike.
  if (keys.length === 0) return
  const accepted = adminKeyCheck(keys)
  // Who each authenticated request is, for the audit events of the changes it makes.
  const actors = new WeakMap<FastifyRequest, AdminActor>()
  const accounts = (request: FastifyRequest): AccountAdmin => {
    const actor = actors.get(request)
    // The onRequest hook below lets no request through without one.
    if (actor === undefined) throw new Error('admin request without an authenticated caller')
    return accountsFor(actor)
  }
  const doc = createAdminDocument()
  doc.collect(app)

  app.setErrorHandler(async (error: FastifyError | StatusError, _request, reply) => {
    const status = adminError(error)
    return await reply.code(status.httpStatus).headers(status.headers).header('cache-control', 'no-store').send(status.toBody())
  })
  app.setNotFoundHandler(async () => { throw notFound() })

  // Before anything is parsed: an unauthenticated request gets nothing read but its headers.
  // The right key is never refused, and only a wrong key counts: a request with no key (any
  // local process, a browser's no-cors GET) must not be able to lock the administrator out.
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    reply.header('cache-control', 'no-store')
    const { authorization } = request.headers
    const credential = accepted(authorization)
    if (credential !== undefined) {
      actors.set(request, { clientIp: request.ip, userAgent: request.headers['user-agent'], credential })
      return
    }
    if (bearerCredential(authorization) === undefined) throw unauthorized(true)
    await countWrongCredentials(request, { limiter, audit, event: 'admin.unauthorized', outcome: 'wrong-key' })
    throw unauthorized(false)
  })

  app.get('/openapi.json', { schema: { hide: true } }, async () => doc.document())
  await app.register(userRoutes, { accounts })
  await app.register(totpAdminRoutes, { accounts })
  await app.register(groupAdminRoutes, { accounts })
  await app.register(eventRoutes, { audit })
  if (apiKeys !== undefined) await app.register(keyRoutes, { accounts, apiKeys, actorOf: (request) => actors.get(request) ?? {} })
  if (webhooks !== undefined) await app.register(webhookRoutes, { outbox: webhooks })
  if (mail !== undefined) await app.register(mailAdminRoutes, { outbox: mail })
  await app.register(signingKeyAdminRoutes, { signingKeys })
  if (sessions !== undefined) await app.register(sessionRoutes, { ...sessions, accounts, actor: ADMIN_API_ACTOR, credentialOf: (request) => actors.get(request)?.credential })
  await app.register(clientAdminRoutes, { clients: oidcClients, actorOf: (request) => actors.get(request) ?? {} })
}
