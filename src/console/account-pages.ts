import { clientName, html, instant, type Markup } from '../sign-in/index.js'
import type { AccountView } from '../core/accounts.js'
import type { SessionInfo } from '../sessions/index.js'
import { accountPath, CONSOLE_PATH } from './layout.js'

/** The accounts' pages: find (by name prefix, a page at a time) and create; one account with its actions. */

/** The create form's values after a refusal (never the password). */
export interface AccountDraft {
  username: string
  kind: 'person' | 'service'
  email: string
  invite: boolean
}

export interface AccountListView {
  prefix: string
  accounts: AccountView[]
  /** The query of the next page, when there is one. */
  next: string | undefined
  /** The create form's values after a refusal. */
  draft?: AccountDraft | undefined
  /** Mail is on: the create form offers an invitation instead of a first password. */
  mailOn: boolean
}

const when = (at: Date | null, none: string): string => at === null ? none : instant(at.getTime())

function status (account: AccountView): Markup {
  const badges: Markup[] = []
  if (account.disabled) badges.push(html`<span class="badge off">disabled</span>`)
  if (account.lockedUntil !== null) badges.push(html`<span class="badge off">locked</span>`)
  if (badges.length === 0) badges.push(html`<span class="badge on">active</span>`)
  return html`${badges}`
}

export function accountListBody (view: AccountListView): Markup {
  const rows = view.accounts.map((account) => html`<tr>
<th scope="row"><a href="${accountPath(account.username)}">${account.username}</a></th>
<td>${account.kind}${account.federated ? ' (directory)' : ''}</td>
<td>${account.groups.length === 0 ? html`<span class="meta">none</span>` : account.groups.join(', ')}</td>
<td>${account.totp ? 'on' : 'off'}</td>
<td>${status(account)}</td>
<td>${when(account.lastLoginAt, 'never')}</td>
</tr>`)
  const draft = view.draft
  return html`<form method="get" action="${CONSOLE_PATH}/accounts" class="search" role="search">
<label for="q">Username starts with</label>
<div class="search-row"><input id="q" name="q" type="search" autocomplete="off" autocapitalize="none" spellcheck="false" maxlength="128" value="${view.prefix}">
<button type="submit" class="secondary" id="search-button">Find</button></div>
</form>
${view.accounts.length === 0
    ? html`<p class="meta" id="no-accounts">No account's username starts with that.</p>`
    : html`<div class="table-box"><table id="accounts">
<caption>Accounts${view.prefix === '' ? '' : html` whose username starts with “${view.prefix}”`}</caption>
<thead><tr><th scope="col">Username</th><th scope="col">Kind</th><th scope="col">Groups</th><th scope="col">Second factor</th><th scope="col">Status</th><th scope="col">Last sign-in</th></tr></thead>
<tbody>${rows}</tbody>
</table></div>`}
${view.next === undefined ? html`` : html`<p class="pager"><a href="${CONSOLE_PATH}/accounts?${view.next}" id="next-page">Next page</a></p>`}
<section aria-labelledby="create-heading">
<h2 id="create-heading">Create an account</h2>
<form method="post" action="${CONSOLE_PATH}/accounts" class="stack narrow" id="create-account">
<label for="new-username">Username</label>
<input id="new-username" name="username" type="text" autocomplete="off" autocapitalize="none" spellcheck="false" maxlength="128" required value="${draft?.username ?? ''}">
<fieldset class="choice"><legend>Kind</legend>
<label class="plain"><input type="radio" name="kind" value="person"${draft?.kind === 'service' ? html`` : html` checked`}> Person (signs in with a password)</label>
<label class="plain"><input type="radio" name="kind" value="service"${draft?.kind === 'service' ? html` checked` : html``}> Service (API keys only, no password)</label>
</fieldset>
<label for="new-email">Email (optional)</label>
<input id="new-email" name="email" type="text" inputmode="email" autocomplete="off" autocapitalize="none" spellcheck="false" maxlength="254" value="${draft?.email ?? ''}" aria-describedby="new-email-hint">
<p class="hint" id="new-email-hint">Where a person's password reset${view.mailOn ? ' and invitation' : ''} mail goes.</p>
${view.mailOn
    ? html`<label class="plain"><input type="checkbox" name="invite" value="yes" id="new-invite"${draft?.invite === true ? html` checked` : html``}> Send an invitation to set the first password</label>
<p class="hint" id="new-invite-hint">A person's account, with the email above: the mail carries a link, valid 7 days, to set the first password. Leave the password empty.</p>`
    : html``}
<label for="new-password">Password (a person's first password)</label>
<input id="new-password" name="password" type="password" autocomplete="new-password" aria-describedby="new-password-hint">
<p class="hint" id="new-password-hint">Leave it empty for a service account${view.mailOn ? ' or an invitation' : ''}. Tell the person to change it after the first sign-in.</p>
<button type="submit" class="secondary" id="create-button">Create account</button>
</form>
</section>`
}

export interface KeyItem {
  id: string
  name: string
  created: Date
  expires: Date
  lastUsed: Date | null
}

export interface AccountPageView {
  account: AccountView
  sessions: SessionInfo[]
  keys: KeyItem[]
  moreKeys: boolean
  /** The address field's value after a refusal; undefined: the account's own. */
  email?: string | undefined
}

function actions (account: AccountView): Markup {
  const path = accountPath(account.username)
  const parts: Markup[] = []
  parts.push(account.disabled
    ? html`<form method="post" action="${path}/enable" class="inline"><button type="submit" class="secondary" id="enable-button">Enable</button></form>`
    : html`<a href="${path}/disable" class="button-link danger" id="disable-link">Disable…</a>`)
  if (account.lockedUntil !== null) parts.push(html`<form method="post" action="${path}/unlock" class="inline"><button type="submit" class="secondary" id="unlock-button">Unlock</button></form>`)
  if (account.totp) parts.push(html`<a href="${path}/reset-totp" class="button-link danger" id="reset-totp-link">Reset second factor…</a>`)
  // A service account has no sessions to sign out of: what ends is its keys.
  parts.push(html`<a href="${path}/revoke-all" class="button-link danger" id="revoke-all-link">${account.kind === 'service' ? 'Revoke every key…' : 'Sign out everywhere…'}</a>`)
  return html`<div class="row-actions" id="account-actions">${parts}</div>`
}

export function accountBody (view: AccountPageView): Markup {
  const { account } = view
  const path = accountPath(account.username)
  const sessions = view.sessions.map((session) => html`<tr>
<th scope="row">${clientName(session.userAgent)}</th>
<td>${session.ip}</td>
<td>${instant(session.created)}</td>
<td>${instant(session.expiresAt)}</td>
<td><a href="${path}/sessions/${session.id}/end" class="danger" aria-label="End the session of ${clientName(session.userAgent)} from ${session.ip}">End…</a></td>
</tr>`)
  const keys = view.keys.map((key) => html`<tr>
<th scope="row">${key.name}</th>
<td>${instant(key.created.getTime())}</td>
<td>${instant(key.expires.getTime())}</td>
<td>${when(key.lastUsed, 'never')}</td>
<td><a href="${path}/keys/${key.id}/revoke" class="danger" aria-label="Revoke API key ${key.name}">Revoke…</a></td>
</tr>`)
  return html`<dl class="facts" id="account-facts">
<div><dt>Kind</dt><dd id="fact-kind">${account.kind}${account.federated ? ' (directory account)' : ''}</dd></div>
<div><dt>Status</dt><dd id="fact-status">${status(account)}${account.lockedUntil === null ? '' : html` <span class="meta">until ${instant(account.lockedUntil.getTime())}</span>`}</dd></div>
<div><dt>Second factor</dt><dd id="fact-totp">${account.totp ? 'on' : 'off'}</dd></div>
<div><dt>Email</dt><dd id="fact-email">${account.email ?? html`<span class="meta">none</span>`}</dd></div>
<div><dt>Groups</dt><dd id="fact-groups">${account.groups.length === 0 ? 'none' : account.groups.join(', ')}</dd></div>
<div><dt>Created</dt><dd>${instant(account.createdAt.getTime())}</dd></div>
<div><dt>Last sign-in</dt><dd id="fact-last-login">${when(account.lastLoginAt, 'never')}</dd></div>
</dl>
${actions(account)}
<section aria-labelledby="groups-heading">
<h2 id="groups-heading">Groups</h2>
<form method="post" action="${path}/groups" class="stack narrow" id="groups-form">
<label for="groups">Local groups</label>
<input id="groups" name="groups" type="text" autocomplete="off" autocapitalize="none" spellcheck="false" maxlength="4096" value="${account.groups.filter((group) => !account.directoryGroups.includes(group)).join(', ')}" aria-describedby="groups-hint">
<p class="hint" id="groups-hint">Separated by commas or spaces; the whole set (an empty field removes every local group).${account.directoryGroups.length === 0 ? '' : html` From the directory: ${account.directoryGroups.join(', ')}.`}</p>
<button type="submit" class="secondary" id="groups-button">Save groups</button>
</form>
</section>
<section aria-labelledby="email-heading">
<h2 id="email-heading">Email</h2>
<form method="post" action="${path}/email" class="stack narrow" id="email-form">
<label for="email">Email address</label>
<input id="email" name="email" type="text" inputmode="email" autocomplete="off" autocapitalize="none" spellcheck="false" maxlength="254" value="${view.email ?? account.email ?? ''}" aria-describedby="email-hint">
<p class="hint" id="email-hint">Where password reset mail goes. An empty field removes it; a change voids the links already mailed to the old address.</p>
<button type="submit" class="secondary" id="email-button">Save email</button>
</form>
</section>
<section aria-labelledby="sessions-heading">
<h2 id="sessions-heading">Sessions</h2>
${view.sessions.length === 0
    ? html`<p class="meta" id="no-sessions">No active sessions.</p>`
    : html`<div class="table-box"><table id="sessions"><caption class="sr-only">Active sessions of ${account.username}</caption>
<thead><tr><th scope="col">Client</th><th scope="col">Address</th><th scope="col">Signed in</th><th scope="col">Until</th><th scope="col"><span class="sr-only">Action</span></th></tr></thead>
<tbody>${sessions}</tbody></table></div>`}
</section>
<section aria-labelledby="keys-heading">
<h2 id="keys-heading">API keys</h2>
${view.keys.length === 0
    ? html`<p class="meta" id="no-keys">No API keys.</p>`
    : html`<div class="table-box"><table id="keys"><caption class="sr-only">API keys of ${account.username}</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col"><span class="sr-only">Action</span></th></tr></thead>
<tbody>${keys}</tbody></table></div>`}
${view.moreKeys ? html`<p class="meta">More keys than listed here: the admin API's <code>GET /admin/users/{username}/keys</code> pages through them all.</p>` : html``}
</section>
<p class="aside"><a href="${CONSOLE_PATH}/events?user=${encodeURIComponent(account.username)}" id="account-events">This account's audit events</a> · <a href="${CONSOLE_PATH}/accounts">All accounts</a></p>`
}
