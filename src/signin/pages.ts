import { html, type Markup } from './html.js'

/**
 * The sign-in pages, rendered on the server: forms that work without JavaScript (the passkey
 * buttons, which need it, stay hidden until the script shows them), labelled fields with the
 * standard autocomplete values, and no inline script or style (the Content-Security-Policy
 * allows this origin's files only).
 */

export const ASSET_PATH = '/auth/signin/assets'

export interface Notice {
  kind: 'error' | 'info'
  text: string
}

function notice (message: Notice | undefined): Markup {
  if (message === undefined) return html``
  return message.kind === 'error'
    ? html`<p class="notice error" role="alert" id="notice">${message.text}</p>`
    : html`<p class="notice info" role="status" id="notice">${message.text}</p>`
}

function layout (title: string, body: Markup, options: { passkeys?: boolean, wide?: boolean } = {}): string {
  const scripts = options.passkeys === true
    ? html`<script src="${ASSET_PATH}/webauthn.js" defer></script><script src="${ASSET_PATH}/signin.js" defer></script>`
    : html``
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="stylesheet" href="${ASSET_PATH}/signin.css">
${scripts}
</head>
<body>
<main class="${options.wide === true ? 'card wide' : 'card'}">
<header class="brand"><span class="logo" aria-hidden="true"></span><span>Sign-in</span></header>
${body}
</main>
<footer class="foot">auth-token-service</footer>
</body>
</html>
`.html
}

function redirectField (rd: string | undefined): Markup {
  return rd === undefined ? html`` : html`<input type="hidden" name="rd" value="${rd}">`
}

export interface SignInView {
  rd?: string | undefined
  username?: string | undefined
  message?: Notice | undefined
}

export function signInPage (view: SignInView): string {
  return layout('Sign in', html`
<h1>Sign in</h1>
${notice(view.message)}
<form method="post" action="/auth/signin" class="stack" id="password-form">
${redirectField(view.rd)}
<label for="username">Username</label>
<input id="username" name="username" type="text" autocomplete="username" autocapitalize="none" spellcheck="false" required value="${view.username ?? ''}"${view.username === undefined || view.username === '' ? html` autofocus` : html``}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${view.username !== undefined && view.username !== '' ? html` autofocus` : html``}>
<button type="submit" class="primary">Sign in</button>
</form>
<div class="passkey" id="passkey-signin" hidden>
<div class="divider"><span>or</span></div>
<button type="button" class="secondary" id="passkey-button" data-rd="${view.rd ?? ''}">Sign in with a passkey</button>
</div>
`, { passkeys: true })
}

export interface CodeStepView {
  rd?: string | undefined
  username: string
  message?: Notice | undefined
}

export function codeStepPage (view: CodeStepView): string {
  return layout('Enter your code', html`
<h1>Two-step verification</h1>
<p class="lead">Signing in as <strong>${view.username}</strong>. Enter the 6-digit code from your authenticator app, or one of your recovery codes.</p>
${notice(view.message)}
<form method="post" action="/auth/signin/code" class="stack">
${redirectField(view.rd)}
<label for="otp">Code</label>
<input id="otp" name="otp" type="text" inputmode="numeric" autocomplete="one-time-code" autocapitalize="none" spellcheck="false" maxlength="64" required autofocus>
<button type="submit" class="primary">Verify</button>
</form>
<p class="aside"><a href="/auth/signin">Start again</a></p>
`)
}

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

export interface SignedInView {
  username: string
  expires: string
  sessions: SessionRow[]
  passkeys: PasskeyListItem[]
  message?: Notice | undefined
}

export function signedInPage (view: SignedInView): string {
  const sessions = view.sessions.map((session) => html`<li><span class="what">${session.client}</span>${session.current ? html` <span class="badge">this browser</span>` : html``}<span class="meta">from ${session.ip} · signed in ${session.created} · until ${session.expires}</span></li>`)
  const passkeys = view.passkeys.map((passkey) => html`<li><span class="what">${passkey.name}</span>
<form method="post" action="/auth/passkeys/${passkey.id}/delete" class="inline"><button type="submit" class="link danger" aria-label="Remove passkey ${passkey.name}">Remove</button></form>
<span class="meta">added ${passkey.created}${passkey.lastUsed === undefined ? html`` : html` · last used ${passkey.lastUsed}`}</span></li>`)
  return layout('Signed in', html`
<h1>You are signed in</h1>
<p class="lead">Signed in as <strong id="signed-in-user">${view.username}</strong> until ${view.expires}.</p>
${notice(view.message)}
<section>
<h2>Your sessions</h2>
${view.sessions.length === 0 ? html`<p class="meta">No sessions listed.</p>` : html`<ul class="list" id="sessions">${sessions}</ul>`}
</section>
<section>
<h2>Passkeys</h2>
${view.passkeys.length === 0 ? html`<p class="meta" id="no-passkeys">No passkeys yet. A passkey signs you in with your device's screen lock instead of a password.</p>` : html`<ul class="list" id="passkeys">${passkeys}</ul>`}
<form method="post" action="/auth/passkeys/options" class="stack" id="passkey-register" hidden>
<input type="text" name="username" autocomplete="username" value="${view.username}" hidden readonly>
<label for="passkey-password">Your password, to add a passkey</label>
<input id="passkey-password" name="current_password" type="password" autocomplete="current-password" required>
<button type="submit" class="secondary" id="register-button">Add a passkey</button>
</form>
</section>
<form method="post" action="/auth/signout" class="signout">
<button type="submit" class="primary" id="signout-button">Sign out</button>
</form>
`, { passkeys: true, wide: true })
}

export function signOutPage (view: { username?: string | undefined, rd?: string | undefined }): string {
  return layout('Sign out', html`
<h1>Sign out</h1>
<p class="lead">${view.username === undefined ? 'You are not signed in.' : html`Signed in as <strong>${view.username}</strong>.`}</p>
<form method="post" action="/auth/signout" class="stack">
${redirectField(view.rd)}
<button type="submit" class="primary">Sign out</button>
</form>
`)
}
