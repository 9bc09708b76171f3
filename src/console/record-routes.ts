import type { FastifyReply, FastifyRequest } from 'fastify'
import { normalizeUsername } from '../core/credentials.js'
import { AUDIT_EVENT_NAMES, type AuditLog } from '../core/stores/audit-log.js'
import { decodeEventCursor, encodeEventCursor, parseSince } from '../admin/views.js'
import { reasons } from '../errors/reasons.js'
import { badRequest, StatusError } from '../errors/status.js'
import type { OidcClients } from '../oidc/index.js'
import type { WebhookOutbox } from '../webhooks/index.js'
import type { MailOutbox, MailView } from '../recovery/index.js'
import { doneNotice } from './account-routes.js'
import { back, field, noticeOf, type ConsoleKit } from './context.js'
import { CONSOLE_PATH, segment } from './layout.js'
import { clientSecretBody, clientsBody, deliveriesBody, eventsBody } from './record-pages.js'
import { dashboardBody, HOURS, lastDayOfLogins } from './dashboard-page.js'
import type { Sessions } from '../sessions/index.js'

/** The dashboard, the audit events, the failed webhook and mail deliveries and the OpenID clients. */

export interface RecordRouteDeps {
  audit: AuditLog
  sessions: Pick<Sessions, 'countActive'>
  /** Undefined: no webhook receivers configured. */
  webhooks: WebhookOutbox | undefined
  /** The recovery and invitation mail outbox; undefined while mail is off. */
  mail: MailOutbox | undefined
  /** Undefined: the OpenID Connect provider is off. */
  oidcClients: OidcClients | undefined
  now: () => number
}

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>

const EVENTS_PAGE = 50
const DELIVERIES_SHOWN = 100
const DAY_MS = 86_400_000

export function registerRecordRoutes (kit: ConsoleKit, get: (path: string, handler: Handler) => void, post: (path: string, handler: Handler) => void,
  { audit, sessions, webhooks, mail, oidcClients, now }: RecordRouteDeps): void {
  const { show } = kit

  get(CONSOLE_PATH, async (request, reply) => {
    // This console's own changes and the Logins a moment ago are in the counts.
    await audit.flush()
    const [found, activeSessions] = await Promise.all([audit.loginsPerHour(new Date(now() - (HOURS - 1) * 3_600_000)), sessions.countActive()])
    return show(request, reply, { section: 'dashboard', title: 'Dashboard', body: dashboardBody({ hours: lastDayOfLogins(found, now()), activeSessions }) })
  })

  get(`${CONSOLE_PATH}/events`, async (request, reply) => {
    const user = field(request.query, 'user')?.trim() ?? ''
    const event = field(request.query, 'event') ?? ''
    const sinceText = field(request.query, 'since')?.trim() ?? ''
    const filter = { user, event, since: sinceText }
    try {
      const since = sinceText === '' ? new Date(now() - DAY_MS) : parseSince(sinceText)
      const cursor = field(request.query, 'cursor')
      await audit.flush()
      const found = await audit.list({
        username: user === '' ? undefined : normalizeUsername(user),
        since,
        event: event === '' ? undefined : event,
        after: decodeEventCursor(cursor === '' ? undefined : cursor),
        limit: EVENTS_PAGE + 1
      })
      const events = found.slice(0, EVENTS_PAGE)
      const last = events.at(-1)
      const next = found.length > EVENTS_PAGE && last !== undefined
        ? new URLSearchParams({ user, event, since: sinceText, cursor: encodeEventCursor(last) }).toString()
        : undefined
      return show(request, reply, { section: 'events', title: 'Audit events', body: eventsBody({ filter, names: AUDIT_EVENT_NAMES, events, next }) })
    } catch (error) {
      if (!(error instanceof StatusError) || error.httpStatus !== 400) throw error
      return show(request, reply, { section: 'events', title: 'Audit events', body: eventsBody({ filter, names: AUDIT_EVENT_NAMES, events: [], next: undefined }), message: noticeOf(error), status: 400 })
    }
  })

  /** Mail that failed, and mail still pending after a failed attempt (the ones a retry can send now), oldest first. */
  const troubledMail = async (outbox: MailOutbox): Promise<MailView[]> => {
    const [failed, pending] = await Promise.all([
      outbox.list({ status: 'failed', limit: DELIVERIES_SHOWN }),
      outbox.list({ status: 'pending', limit: DELIVERIES_SHOWN })
    ])
    return [...failed, ...pending.filter((one) => one.lastError !== null)].sort((a, b) => Number(BigInt(a.id) - BigInt(b.id)))
  }

  // The URL of the webhooks' page when it had no mail: kept, so bookmarks and the docs' links hold.
  get(`${CONSOLE_PATH}/webhooks`, async (request, reply) => {
    const [deliveries, mails] = await Promise.all([
      webhooks === undefined ? undefined : webhooks.list({ status: 'failed', limit: DELIVERIES_SHOWN }),
      mail === undefined ? undefined : troubledMail(mail)
    ])
    return show(request, reply, {
      section: 'webhooks',
      title: 'Failed deliveries',
      body: deliveriesBody(deliveries, mails),
      message: doneNotice(request.query, { retried: 'The delivery is sent again now.', 'mail-retried': 'The mail is sent again now.' })
    })
  })

  post(`${CONSOLE_PATH}/webhooks/:id/retry`, async (request, reply) => {
    const { id } = request.params as { id: string }
    if (webhooks === undefined || !/^[0-9]{1,18}$/.test(id) || !await webhooks.retry(id)) {
      throw new StatusError(404, 'Not Found', 404, {}, { detail: reasons.noSuchDelivery() })
    }
    const actor = kit.actorOf(request)
    audit.record({ event: 'webhook.retry', ...actor, outcome: `retried:${id}` })
    return await back(reply, `${CONSOLE_PATH}/webhooks`, 'retried')
  })

  // Sends a pending mail now, as POST /admin/mail/deliveries/{id}/retry does; audited with the acting admin, as a webhook's retry.
  post(`${CONSOLE_PATH}/mail/:id/retry`, async (request, reply) => {
    const { id } = request.params as { id: string }
    if (mail === undefined || !/^[0-9]{1,18}$/.test(id) || !await mail.retry(id)) {
      throw new StatusError(404, 'Not Found', 404, {}, { detail: reasons.noSuchMailDelivery() })
    }
    audit.record({ event: 'mail.retry', ...kit.actorOf(request), outcome: `retried:${id}` })
    return await back(reply, `${CONSOLE_PATH}/webhooks`, 'mail-retried')
  })

  const clientsOff = (): StatusError => new StatusError(404, 'Not Found', 404, {}, { detail: reasons.oidcOff() })

  get(`${CONSOLE_PATH}/clients`, async (request, reply) => {
    const clients = oidcClients === undefined ? undefined : await oidcClients.list()
    return show(request, reply, { section: 'clients', title: 'OpenID Connect clients', body: clientsBody(clients), message: doneNotice(request.query, { removed: 'The client was removed; every token it held ended.' }) })
  })

  post(`${CONSOLE_PATH}/clients`, async (request, reply) => {
    if (oidcClients === undefined) throw clientsOff()
    const name = field(request.body, 'name') ?? ''
    const redirectUris = (field(request.body, 'redirect_uris') ?? '').split(/\s+/).filter((uri) => uri !== '')
    try {
      if (name.trim() === '') throw badRequest(reasons.required('name'))
      const { client, secret } = await oidcClients.create({ name, redirectUris, public: field(request.body, 'public') === 'true' }, kit.actorOf(request))
      // The secret is on this answer alone (never cached: the pages are no-store), as the admin API's.
      return show(request, reply, { section: 'clients', title: 'Client registered', body: clientSecretBody(client, secret) })
    } catch (error) {
      if (!(error instanceof StatusError) || error.httpStatus !== 400) throw error
      return show(request, reply, { section: 'clients', title: 'OpenID Connect clients', body: clientsBody(await oidcClients.list()), message: noticeOf(error), status: 400 })
    }
  })

  kit.destructive(`${CONSOLE_PATH}/clients/:id/remove`, 'clients', async (request) => {
    if (oidcClients === undefined) throw clientsOff()
    const { id } = request.params as { id: string }
    const client = (await oidcClients.list()).find((candidate) => candidate.clientId === id)
    if (client === undefined) throw new StatusError(404, 'Not Found', 404, {}, { detail: reasons.noSuchClient() })
    return {
      question: `Remove the client ${client.name}?`,
      consequence: 'The application can no longer sign anyone in, and every access and refresh token it holds ends at once.',
      action: `${CONSOLE_PATH}/clients/${segment(client.clientId)}/remove`,
      button: 'Remove the client',
      cancel: `${CONSOLE_PATH}/clients`
    }
  }, async (request, reply) => {
    if (oidcClients === undefined) throw clientsOff()
    await oidcClients.remove((request.params as { id: string }).id, kit.actorOf(request))
    return await back(reply, `${CONSOLE_PATH}/clients`, 'removed')
  })
}
