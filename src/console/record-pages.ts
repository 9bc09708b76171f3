import { html, instant, type Markup } from '../sign-in/index.js'
import type { StoredAuditEvent } from '../core/stores/audit-log.js'
import type { DeliveryView } from '../webhooks/index.js'
import type { MailView } from '../recovery/index.js'
import type { OidcClientRow } from '../oidc/index.js'
import { accountPath, CONSOLE_PATH, segment } from './layout.js'

/** The pages that list records: the audit events (filtered), the failed webhook and mail deliveries, the OpenID clients. */

export interface EventFilterView {
  user: string
  event: string
  since: string
}

export interface EventsView {
  filter: EventFilterView
  /** Every event name, for the filter's choice. */
  names: readonly string[]
  events: StoredAuditEvent[]
  /** The query of the next page, when there is one. */
  next: string | undefined
}

export function eventsBody (view: EventsView): Markup {
  const { filter } = view
  const options = view.names.map((name) => name === filter.event
    ? html`<option value="${name}" selected>${name}</option>`
    : html`<option value="${name}">${name}</option>`)
  const rows = view.events.map((event) => html`<tr>
<td>${instant(event.occurredAt.getTime())}</td>
<td><code>${event.event}</code></td>
<td>${event.username === undefined ? html`<span class="meta">–</span>` : html`<a href="${accountPath(event.username)}">${event.username}</a>`}</td>
<td class="actor">${event.actor ?? (event.credential === undefined ? html`<span class="meta">–</span>` : html`<span class="meta" title="no person: the credential that acted">${event.credential}</span>`)}</td>
<td>${event.clientIp ?? ''}</td>
<td><code>${event.outcome}</code></td>
</tr>`)
  return html`<form method="get" action="${CONSOLE_PATH}/events" class="filters" id="event-filters">
<div><label for="filter-user">User</label><input id="filter-user" name="user" type="text" autocomplete="off" autocapitalize="none" spellcheck="false" maxlength="128" value="${filter.user}"></div>
<div><label for="filter-event">Event</label><select id="filter-event" name="event"><option value="">any</option>${options}</select></div>
<div><label for="filter-since">Since</label><input id="filter-since" name="since" type="text" autocomplete="off" placeholder="2026-11-28T09:00Z" maxlength="40" value="${filter.since}" aria-describedby="since-hint"></div>
<div class="filter-go"><button type="submit" class="secondary" id="filter-button">Show</button></div>
</form>
<p class="hint" id="since-hint">Since: an ISO 8601 date or time (UTC when no zone is given); empty: the last 24 hours. Oldest first.</p>
${view.events.length === 0
    ? html`<p class="meta" id="no-events">No events match.</p>`
    : html`<div class="table-box"><table id="events">
<caption class="sr-only">Audit events, oldest first</caption>
<thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">Account</th><th scope="col">Actor</th><th scope="col">Client address</th><th scope="col">Outcome</th></tr></thead>
<tbody>${rows}</tbody></table></div>`}
${view.next === undefined ? html`` : html`<p class="pager"><a href="${CONSOLE_PATH}/events?${view.next}" id="next-page">Next page</a></p>`}`
}

/** The failed deliveries' page: the webhooks', then the recovery and invitation mail's. */
export function deliveriesBody (deliveries: readonly DeliveryView[] | undefined, mails: readonly MailView[] | undefined): Markup {
  return html`<section aria-labelledby="webhooks-heading">
<h2 id="webhooks-heading">Webhooks</h2>
${webhooksBody(deliveries)}
</section>
<section aria-labelledby="mail-heading">
<h2 id="mail-heading">Mail</h2>
${mailBody(mails)}
</section>`
}

const MAIL_KINDS: Readonly<Record<MailView['kind'], string>> = { reset: 'password reset', invite: 'invitation' }

/**
 * Recovery and invitation mail that failed, or is pending after a failed attempt. The address is
 * shown as the admin API's GET /admin/mail/deliveries shows it (`to`); never the link, which the
 * outbox keeps sealed and the view does not carry.
 */
export function mailBody (mails: readonly MailView[] | undefined): Markup {
  if (mails === undefined) return html`<p class="meta" id="mail-off">Mail is off (<code>AUTH_SMTP_URL</code> is unset): no recovery or invitation mail is sent.</p>`
  const rows = mails.map((mail) => html`<tr>
<td>${MAIL_KINDS[mail.kind]}</td>
<td><a href="${accountPath(mail.username)}">${mail.username}</a></td>
<td class="wrap">${mail.recipient}</td>
<td>${mail.status === 'pending' ? html`pending${mail.nextAttempt === null ? '' : html` <span class="meta">next ${instant(mail.nextAttempt.getTime())}</span>`}` : 'failed'}</td>
<td>${mail.attempts}</td>
<td>${instant(mail.created.getTime())}</td>
<td class="wrap">${mail.lastError ?? ''}</td>
<td>${mail.status === 'pending'
    ? html`<form method="post" action="${CONSOLE_PATH}/mail/${segment(mail.id)}/retry" class="inline"><button type="submit" class="link" aria-label="Retry mail ${mail.id} to ${mail.username}">Retry</button></form>`
    : html`<span class="meta">link no longer works</span>`}</td>
</tr>`)
  return html`<p class="lead">Password reset and invitation mail the mail server did not take. A pending one is tried again with backoff while its link works; a retry sends it now. A failed one's link no longer works (expired, used, or replaced by a newer one): send a new one, a reset from the sign-in page or the invitation again from <a href="${CONSOLE_PATH}/accounts">Accounts</a>.</p>
${mails.length === 0
    ? html`<p class="meta" id="no-mail-deliveries">No failed mail.</p>`
    : html`<div class="table-box"><table id="mail-deliveries"><caption class="sr-only">Failed and retrying mail</caption>
<thead><tr><th scope="col">Mail</th><th scope="col">Account</th><th scope="col">To</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Created</th><th scope="col">Last error</th><th scope="col"><span class="sr-only">Action</span></th></tr></thead>
<tbody>${rows}</tbody></table></div>`}`
}

export function webhooksBody (deliveries: readonly DeliveryView[] | undefined): Markup {
  if (deliveries === undefined) return html`<p class="meta" id="webhooks-off">No webhook receivers are configured (<code>AUTH_WEBHOOK_URL</code>).</p>`
  const rows = deliveries.map((delivery) => html`<tr>
<td><code>${delivery.type}</code></td>
<td class="wrap">${delivery.url}</td>
<td>${delivery.attempts}</td>
<td>${instant(delivery.created.getTime())}</td>
<td class="wrap">${delivery.lastError ?? ''}</td>
<td><form method="post" action="${CONSOLE_PATH}/webhooks/${segment(delivery.id)}/retry" class="inline"><button type="submit" class="link" aria-label="Retry delivery ${delivery.id} of ${delivery.type}">Retry</button></form></td>
</tr>`)
  return html`<p class="lead">Deliveries that kept failing for their whole retry window. A retry sends the event again now, with a fresh window.</p>
${deliveries.length === 0
    ? html`<p class="meta" id="no-deliveries">No failed deliveries.</p>`
    : html`<div class="table-box"><table id="deliveries"><caption class="sr-only">Failed webhook deliveries</caption>
<thead><tr><th scope="col">Event</th><th scope="col">Receiver</th><th scope="col">Attempts</th><th scope="col">Created</th><th scope="col">Last error</th><th scope="col"><span class="sr-only">Action</span></th></tr></thead>
<tbody>${rows}</tbody></table></div>`}`
}

export function clientsBody (clients: readonly OidcClientRow[] | undefined): Markup {
  if (clients === undefined) return html`<p class="meta" id="oidc-off">The OpenID Connect provider is off (<code>AUTH_OIDC_ISSUER</code> is unset).</p>`
  const rows = clients.map((client) => html`<tr>
<th scope="row">${client.name}</th>
<td><code>${client.clientId}</code></td>
<td>${client.public ? 'public' : 'confidential'}</td>
<td class="wrap">${client.redirectUris.join(' ')}</td>
<td><a href="${CONSOLE_PATH}/clients/${segment(client.clientId)}/remove" class="danger" aria-label="Remove client ${client.name}">Remove…</a></td>
</tr>`)
  return html`${clients.length === 0
    ? html`<p class="meta" id="no-clients">No clients registered.</p>`
    : html`<div class="table-box"><table id="clients"><caption class="sr-only">OpenID Connect clients</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Client id</th><th scope="col">Type</th><th scope="col">Redirect URIs</th><th scope="col"><span class="sr-only">Action</span></th></tr></thead>
<tbody>${rows}</tbody></table></div>`}
<section aria-labelledby="add-client-heading">
<h2 id="add-client-heading">Add a client</h2>
<form method="post" action="${CONSOLE_PATH}/clients" class="stack narrow" id="add-client">
<label for="client-name">Name</label>
<input id="client-name" name="name" type="text" autocomplete="off" maxlength="128" required>
<label for="client-redirect">Redirect URIs</label>
<input id="client-redirect" name="redirect_uris" type="text" autocomplete="off" spellcheck="false" maxlength="4096" required aria-describedby="client-redirect-hint">
<p class="hint" id="client-redirect-hint">Exact URLs, separated by spaces.</p>
<label class="plain"><input type="checkbox" name="public" value="true"> Public client (a browser app or a command line: no secret, PKCE)</label>
<button type="submit" class="secondary" id="add-client-button">Add client</button>
</form>
</section>`
}

export function clientSecretBody (client: OidcClientRow, secret: string | undefined): Markup {
  return html`<p class="notice info" role="status">${secret === undefined ? 'The public client is registered. It has no secret.' : 'Copy the secret now: it will not be shown again. Only a hash of it is kept.'}</p>
<dl class="facts"><div><dt>Name</dt><dd>${client.name}</dd></div><div><dt>Client id</dt><dd><code id="client-id">${client.clientId}</code></dd></div></dl>
${secret === undefined
? html``
: html`<label for="client-secret">Client secret</label>
<textarea id="client-secret" class="secret" rows="2" readonly autocomplete="off" spellcheck="false" autofocus>${secret}</textarea>`}
<p class="aside"><a href="${CONSOLE_PATH}/clients">Back to the clients</a></p>`
}
