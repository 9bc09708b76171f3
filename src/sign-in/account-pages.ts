import { html, type Markup } from './html.js'
import { layout, notice, type Branded, type Notice } from './pages.js'
import { qrSvg } from './qr.js'

/**
 * The account page (the signed-in page) and the two pages that show a secret once: the second
 * factor's enrollment and a new API key. Sections as Keycloak's account console and GitHub's
 * settings group them: sessions, password, two-step verification, passkeys, API keys. Every
 * action is a plain form posted to /auth/account/…; only adding a passkey needs the script.
 */

export const ACCOUNT_PATH = '/auth/account'

export interface SessionRow {
  id: string
  created: string
  expires: string
  ip: string
  /** "Chrome 142 on Linux" */
  client: string
  current: boolean
}

export interface PasskeyListItem {
  id: string
  name: string
  created: string
  lastUsed: string | undefined
}

export interface KeyListItem {
  id: string
  name: string
  created: string
  expires: string
  lastUsed: string | undefined
}

export interface AccountView extends Branded {
  username: string
  expires: string
  /** The directory owns the password: no change here. */
  federated: boolean
  sessions: SessionRow[]
  passkeys: PasskeyListItem[]
  totpActive: boolean
  keys: KeyListItem[]
  /** More keys than the page lists. */
  moreKeys: boolean
  keyDefaultDays: number
  keyMaxDays: number
  message?: Notice | undefined
}

function sessionsSection (view: AccountView): Markup {
  const others = view.sessions.filter((session) => !session.current).length
  const rows = view.sessions.map((session) => html`<li><span class="what">${session.client}</span>${session.current
    ? html` <span class="badge">this browser</span>`
    : html`
<form method="post" action="${ACCOUNT_PATH}/sessions/${session.id}/end" class="inline"><button type="submit" class="link danger" aria-label="End the session of ${session.client} from ${session.ip}">End</button></form>`}
<span class="meta">from ${session.ip} · signed in ${session.created} · until ${session.expires}</span></li>`)
  return html`<section id="sessions-section" aria-labelledby="sessions-heading">
<h2 id="sessions-heading">Sessions</h2>
${view.sessions.length === 0 ? html`<p class="meta">No sessions listed.</p>` : html`<ul class="list" id="sessions">${rows}</ul>`}
${others === 0
    ? html``
    : html`<form method="post" action="${ACCOUNT_PATH}/sessions/end-others" class="row"><button type="submit" class="secondary" id="end-others">Sign out ${others === 1 ? 'the other session' : `all ${others} other sessions`}</button></form>`}
</section>`
}

function passwordSection (view: AccountView): Markup {
  const body = view.federated
    ? html`<p class="meta" id="password-federated">Your password is kept by your organisation's directory, which checks it at every sign-in. Change it there; this service never stores it.</p>`
    : html`<form method="post" action="${ACCOUNT_PATH}/password" class="stack" id="password-change">
<input type="text" name="username" autocomplete="username" value="${view.username}" hidden readonly>
<label for="current-password">Current password</label>
<input id="current-password" name="current_password" type="password" autocomplete="current-password" required>
<label for="new-password">New password</label>
<input id="new-password" name="new_password" type="password" autocomplete="new-password" required aria-describedby="new-password-hint">
<label for="confirm-password">New password again</label>
<input id="confirm-password" name="confirm_password" type="password" autocomplete="new-password" required>
<p class="hint" id="new-password-hint">Your other sessions are signed out when it changes; this one stays.</p>
<button type="submit" class="secondary">Change password</button>
</form>`
  return html`<section id="password-section" aria-labelledby="password-heading">
<h2 id="password-heading">Password</h2>
${body}
</section>`
}

function totpSection (view: AccountView): Markup {
  const body = view.totpActive
    ? html`<p id="totp-state"><span class="badge on">On</span> Signing in with your password also asks for a code from your authenticator app (or a recovery code).</p>
<form method="post" action="${ACCOUNT_PATH}/totp/remove" class="stack" id="totp-remove">
<input type="text" name="username" autocomplete="username" value="${view.username}" hidden readonly>
<label for="totp-remove-password">Your password, to turn it off</label>
<input id="totp-remove-password" name="current_password" type="password" autocomplete="current-password" required>
<label for="totp-remove-code">A code from your app, or a recovery code</label>
<input id="totp-remove-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" autocapitalize="none" spellcheck="false" maxlength="64" required>
<button type="submit" class="secondary danger-border">Turn off two-step verification</button>
</form>`
    : html`<p id="totp-state"><span class="badge">Off</span> Add a code from an authenticator app to your password, so that a stolen password alone does not sign anyone in.</p>
<form method="post" action="${ACCOUNT_PATH}/totp" class="stack" id="totp-begin">
<input type="text" name="username" autocomplete="username" value="${view.username}" hidden readonly>
<label for="totp-begin-password">Your password, to set it up</label>
<input id="totp-begin-password" name="current_password" type="password" autocomplete="current-password" required>
<button type="submit" class="secondary">Set up two-step verification</button>
</form>`
  return html`<section id="totp-section" aria-labelledby="totp-heading">
<h2 id="totp-heading">Two-step verification</h2>
${body}
</section>`
}

function passkeysSection (view: AccountView): Markup {
  const rows = view.passkeys.map((passkey) => html`<li><span class="what">${passkey.name}</span>
<form method="post" action="/auth/passkeys/${passkey.id}/delete" class="inline"><button type="submit" class="link danger" aria-label="Remove passkey ${passkey.name}">Remove</button></form>
<span class="meta">added ${passkey.created}${passkey.lastUsed === undefined ? html`` : html` · last used ${passkey.lastUsed}`}</span></li>`)
  return html`<section id="passkeys-section" aria-labelledby="passkeys-heading">
<h2 id="passkeys-heading">Passkeys</h2>
${view.passkeys.length === 0 ? html`<p class="meta" id="no-passkeys">No passkeys yet. A passkey signs you in with your device's screen lock instead of a password.</p>` : html`<ul class="list" id="passkeys">${rows}</ul>`}
<noscript><p class="hint">Adding a passkey needs JavaScript: your browser talks to your device's authenticator.</p></noscript>
<form method="post" action="/auth/passkeys/options" class="stack" id="passkey-register" hidden>
<input type="text" name="username" autocomplete="username" value="${view.username}" hidden readonly>
<label for="passkey-password">Your password, to add a passkey</label>
<input id="passkey-password" name="current_password" type="password" autocomplete="current-password" required>
<button type="submit" class="secondary" id="register-button">Add a passkey</button>
</form>
</section>`
}

function keysSection (view: AccountView): Markup {
  const rows = view.keys.map((key) => html`<li><span class="what">${key.name}</span>
<form method="post" action="${ACCOUNT_PATH}/keys/${key.id}/revoke" class="inline"><button type="submit" class="link danger" aria-label="Revoke API key ${key.name}">Revoke</button></form>
<span class="meta">created ${key.created} · expires ${key.expires} · ${key.lastUsed === undefined ? 'never used' : html`last used ${key.lastUsed}`}</span></li>`)
  return html`<section id="keys-section" aria-labelledby="keys-heading">
<h2 id="keys-heading">API keys</h2>
<p class="hint">A key lets a program act as you (<code>Authorization: Bearer atsk_…</code>) until it expires or you revoke it; signing out does not end it.</p>
${view.keys.length === 0 ? html`<p class="meta" id="no-keys">No API keys.</p>` : html`<ul class="list" id="keys">${rows}</ul>`}
${view.moreKeys ? html`<p class="meta">More keys than listed here: <code>GET /auth/keys</code> pages through them all.</p>` : html``}
<form method="post" action="${ACCOUNT_PATH}/keys" class="stack" id="key-create">
<input type="text" name="username" autocomplete="username" value="${view.username}" hidden readonly>
<label for="key-name">Key name</label>
<input id="key-name" name="name" type="text" autocomplete="off" maxlength="128" required aria-describedby="key-name-hint">
<p class="hint" id="key-name-hint">What it is for, e.g. "backup script on build-3".</p>
<label for="key-days">Valid for (days)</label>
<input id="key-days" name="expires_in_days" type="number" inputmode="numeric" min="1" max="${view.keyMaxDays}" value="${view.keyDefaultDays}" required>
<label for="key-password">Your password, to create a key</label>
<input id="key-password" name="current_password" type="password" autocomplete="current-password" required>
<button type="submit" class="secondary">Create API key</button>
</form>
</section>`
}

export function accountPage (view: AccountView): string {
  return layout('Your account', view.brand, html`
<h1>Your account</h1>
<p class="lead">Signed in as <strong id="signed-in-user">${view.username}</strong> until ${view.expires}.</p>
${notice(view.message)}
<nav class="toc" aria-label="Sections"><a href="#sessions-section">Sessions</a><a href="#password-section">Password</a><a href="#totp-section">Two-step verification</a><a href="#passkeys-section">Passkeys</a><a href="#keys-section">API keys</a></nav>
${sessionsSection(view)}
${passwordSection(view)}
${totpSection(view)}
${passkeysSection(view)}
${keysSection(view)}
<form method="post" action="/auth/signout" class="signout">
<button type="submit" class="primary" id="signout-button">Sign out</button>
</form>
`, { passkeys: true, wide: true })
}

export interface TotpEnrollmentView extends Branded {
  username: string
  /** Base32. */
  secret: string
  otpauthUri: string
  /** Shown on the first page only: a retry after a wrong code has none to show. */
  recoveryCodes: string[] | undefined
  message?: Notice | undefined
}

/** "JBSW Y3DP …": groups of four, as a person types it. */
const grouped = (secret: string): string => secret.replace(/(.{4})(?=.)/g, '$1 ')

export function totpEnrollmentPage (view: TotpEnrollmentView): string {
  const codes = view.recoveryCodes
  return layout('Set up two-step verification', view.brand, html`
<h1>Set up two-step verification</h1>
${notice(view.message)}
<ol class="steps">
<li><p>Scan this code with your authenticator app (Aegis, Google Authenticator, 1Password, …).</p>
<figure class="qr-box">${qrSvg(view.otpauthUri, 'QR code of your two-step verification key')}</figure>
<p>Or type this key in the app: <code id="totp-secret" class="secret">${grouped(view.secret)}</code></p></li>
${codes === undefined
    ? html`<li><p>Your recovery codes were shown when you began. If you did not save them, <a href="/auth/signin#totp-section">start again</a>.</p></li>`
    : html`<li><p><strong>Save these recovery codes</strong> somewhere safe. Each signs you in once if you lose your device. They will not be shown again.</p>
<ol class="codes" id="recovery-codes">${codes.map((code) => html`<li><code>${code}</code></li>`)}</ol></li>`}
<li><form method="post" action="${ACCOUNT_PATH}/totp/confirm" class="stack" id="totp-confirm">
<input type="hidden" name="secret" value="${view.secret}">
<label for="totp-code">Enter the 6-digit code the app shows</label>
<input id="totp-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" autocapitalize="none" spellcheck="false" maxlength="10" required autofocus>
<button type="submit" class="primary">Turn on</button>
</form></li>
</ol>
<p class="aside"><a href="/auth/signin">Cancel</a> (two-step verification stays off)</p>
`, { wide: true })
}

export interface NewKeyView extends Branded {
  name: string
  expires: string
  secret: string
}

export function newKeyPage (view: NewKeyView): string {
  return layout('Your new API key', view.brand, html`
<h1>Your new API key</h1>
<p class="notice info" role="status" id="notice">Copy the key now: it will not be shown again. Only a hash of it is kept.</p>
<p class="lead"><strong>${view.name}</strong>, valid until ${view.expires}.</p>
<label for="key-secret">Key</label>
<textarea id="key-secret" class="secret" rows="2" readonly autocomplete="off" spellcheck="false" autofocus>${view.secret}</textarea>
<p class="hint">Send it as <code>Authorization: Bearer &lt;key&gt;</code>. Keep it out of source code and logs.</p>
<p class="aside"><a href="/auth/signin#keys-section">Back to your account</a></p>
`, { wide: true })
}
