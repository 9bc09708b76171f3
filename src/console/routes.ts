import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { AccountAdmin, AdminActor } from '../core/accounts.js'
import type { AuthService } from '../core/auth.js'
import type { AuditLog } from '../core/stores/audit-log.js'
import type { Config } from '../config/config.js'
import { StatusError } from '../errors/status.js'
import { reasons } from '../errors/reasons.js'
import { refuseOtherMethods } from '../http/methods.js'
import type { ApiKeys } from '../api-keys/index.js'
import type { OidcClients } from '../oidc/index.js'
import type { Sessions } from '../sessions/index.js'
import type { WebhookOutbox } from '../webhooks/index.js'
import type { MailOutbox } from '../recovery/index.js'
import { brandFor, html, pageHeaders } from '../sign-in/index.js'
import { registerAccountRoutes } from './account-routes.js'
import { CONSOLE_STYLESHEET } from './assets.js'
import { createKit, noticeOf, type Admin } from './context.js'
import { createGate } from './gate.js'
import { CONSOLE_ASSETS, CONSOLE_PATH } from './layout.js'
import { registerRecordRoutes } from './record-routes.js'

export interface ConsoleRoutesOptions {
  config: Pick<Config, 'adminGroup' | 'signinTitle' | 'redirectAllowed'>
  auth: Pick<AuthService, 'authenticate'>
  /** The account administration acting as the signed-in admin (its changes audited with `actor`). */
  accountsFor: (actor: AdminActor) => AccountAdmin
  sessions: Sessions
  apiKeys: ApiKeys
  audit: AuditLog
  /** Undefined: the OpenID Connect provider is off. */
  oidcClients: OidcClients | undefined
  /** Undefined: no webhook receivers configured. */
  webhooks: WebhookOutbox | undefined
  /** The recovery and invitation mail outbox; undefined while mail is off (AUTH_SMTP_URL unset). */
  mail: MailOutbox | undefined
  now?: () => number
}

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>

/**
 * The admin console (api-contract.md, "Admin console (for people)") under /console on the public
 * port: the sign-in pages' headers (strict CSP, no framing), their cookie as the way in, and
 * the cross-site rule on every post (http/cross-site.ts adds it to /console as to /auth/account).
 * The composition root registers it only while AUTH_CONSOLE is on; off, every path is a 404.
 */
export const consoleRoutes: FastifyPluginAsync<ConsoleRoutesOptions> = async (app, options) => {
  const { config, auth, accountsFor, sessions, apiKeys, audit, oidcClients, webhooks, mail } = options
  const now = options.now ?? Date.now
  const headers = { ...pageHeaders(config.redirectAllowed), 'cache-control': 'no-store' }
  const brandOf = (request: FastifyRequest): string => brandFor(config.signinTitle, request.hostname)
  const gate = createGate(auth, config.adminGroup)

  app.get(`${CONSOLE_ASSETS}/console.css`, { schema: { hide: true } }, async (_request, reply) =>
    await reply.header('content-type', 'text/css; charset=utf-8').header('x-content-type-options', 'nosniff').send(CONSOLE_STYLESHEET))
  refuseOtherMethods(app, `${CONSOLE_ASSETS}/console.css`, ['GET'])

  await app.register(async (pages: FastifyInstance) => {
    const admins = new WeakMap<FastifyRequest, Admin>()
    const methods = new Map<string, string[]>()
    const route = (method: 'GET' | 'POST', path: string, handler: Handler): void => {
      pages.route({ method, url: path, schema: { hide: true }, handler })
      methods.set(path, [...(methods.get(path) ?? []), method])
    }
    const get = (path: string, handler: Handler): void => { route('GET', path, handler) }
    const post = (path: string, handler: Handler): void => { route('POST', path, handler) }
    const kit = createKit({ admins, accountsFor, headers, brandOf, oidc: oidcClients !== undefined, register: { get, post } })

    // After the cross-site check (onRequest) and the body's parsing: who is here, and may they.
    pages.addHook('preHandler', async (request, reply) => {
      const visitor = await gate.visitor(request)
      if (visitor.kind === 'admin') {
        admins.set(request, { username: visitor.username, accountId: visitor.accountId })
        return
      }
      if (visitor.kind === 'outsider') {
        return await kit.plain(reply, 403, brandOf(request), 'Not for this account',
          `You are signed in as ${visitor.username}, who is not in the group allowed to use the admin console.`)
      }
      // Through the sign-in and back: a page asked for comes back to itself, a form to the console.
      const rd = request.method === 'GET' ? request.url : CONSOLE_PATH
      return await reply.code(303).headers({ 'cache-control': 'no-store' }).header('location', `/auth/signin?rd=${rd}`).send()
    })

    pages.setErrorHandler(async (error, request, reply) => {
      if (!(error instanceof StatusError) || error.status === 500) throw error
      reply.headers(error.headers)
      // A refusal before the gate (the cross-site rule, a bad query) has no admin to show the frame to.
      if (!admins.has(request)) return kit.plain(reply, error.httpStatus, brandOf(request), error.httpStatus === 403 ? 'Refused' : 'Not done', noticeOf(error).text)
      return kit.show(request, reply, { section: 'accounts', title: error.httpStatus === 404 ? 'Not found' : 'Not done', body: backLink(), message: noticeOf(error), status: error.httpStatus })
    })

    registerRecordRoutes(kit, get, post, { audit, sessions, webhooks, mail, oidcClients, now })
    registerAccountRoutes(kit, get, post, { sessions, apiKeys, mailOn: mail !== undefined })
    // Any other console path, behind the gate like the pages (an outsider learns nothing of which exist): the console's 404 page.
    pages.route({ method: 'GET', url: `${CONSOLE_PATH}/*`, schema: { hide: true }, handler: async () => { throw new StatusError(404, 'Not Found', 404, {}, { detail: reasons.noSuchConsolePage() }) } })
    // Outside the gate: a wrong method is told what works, signed in or not.
    for (const [path, allowed] of methods) refuseOtherMethods(app, path, allowed as Array<'GET' | 'POST'>)
  })
}

function backLink (): ReturnType<typeof html> {
  return html`<p class="aside"><a href="${CONSOLE_PATH}">Dashboard</a> · <a href="${CONSOLE_PATH}/accounts">Accounts</a></p>`
}
