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

/** The name the pages show: whose sign-in this is (AUTH_SIGNIN_TITLE, or the host name asked for). */
export interface Branded {
  brand: string
}

export function notice (message: Notice | undefined): Markup {
  if (message === undefined) return html``
  return message.kind === 'error'
    ? html`<p class="notice error" role="alert" id="notice">${message.text}</p>`
    : html`<p class="notice info" role="status" id="notice">${message.text}</p>`
}

export function layout (title: string, brand: string, body: Markup, options: { passkeys?: boolean, wide?: boolean, refresh?: string } = {}): string {
  const scripts = options.passkeys === true
    ? html`<script src="${ASSET_PATH}/webauthn.js" defer></script><script src="${ASSET_PATH}/signin.js" defer></script>`
    : html``
  const refresh = options.refresh === undefined ? html`` : html`<meta http-equiv="refresh" content="0;url=${options.refresh}">`
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="icon" href="${ASSET_PATH}/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${ASSET_PATH}/signin.css">
${refresh}${scripts}
</head>
<body>
<main class="${options.wide === true ? 'card wide' : 'card'}">
<header class="brand"><img class="logo" src="${ASSET_PATH}/icon.svg" alt="" width="28" height="28"><span id="brand">${brand}</span></header>
${body}
</main>
<footer class="foot">auth-token-service</footer>
</body>
</html>
`.html
}

export function redirectField (rd: string | undefined): Markup {
  return rd === undefined ? html`` : html`<input type="hidden" name="rd" value="${rd}">`
}

export interface SignInView extends Branded {
  rd?: string | undefined
  username?: string | undefined
  message?: Notice | undefined
  /** `login`: an application asked for a new sign-in (OpenID Connect's prompt=login or max_age), the browser's sign-in notwithstanding. */
  prompt?: SignInPrompt | undefined
  /** Mail is on: the page links to /auth/reset ("Forgot your password?"). */
  forgotPassword?: boolean | undefined
}

/** What an application may ask of the sign-in page: a sign-in made now, not the one the browser holds. */
export type SignInPrompt = 'login'

export function signInPage (view: SignInView): string {
  return layout('Sign in', view.brand, html`
<h1>Sign in</h1>
${view.prompt === 'login' ? html`<p class="lead">The application asks you to sign in again.</p>` : html``}
${notice(view.message)}
<form method="post" action="/auth/signin" class="stack" id="password-form">
${redirectField(view.rd)}
${view.prompt === 'login' ? html`<input type="hidden" name="prompt" value="login">` : html``}
<label for="username">Username</label>
<input id="username" name="username" type="text" autocomplete="username" autocapitalize="none" spellcheck="false" required value="${view.username ?? ''}"${view.username === undefined || view.username === '' ? html` autofocus` : html``}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${view.username !== undefined && view.username !== '' ? html` autofocus` : html``}>
<button type="submit" class="primary">Sign in</button>
</form>
${view.forgotPassword === true ? html`<p class="aside"><a href="/auth/reset" id="forgot-password">Forgot your password?</a></p>` : html``}
<div class="passkey" id="passkey-signin" hidden>
<div class="divider"><span>or</span></div>
<button type="button" class="secondary" id="passkey-button" data-rd="${view.rd ?? ''}">Sign in with a passkey</button>
</div>
`, { passkeys: true })
}

export interface CodeStepView extends Branded {
  rd?: string | undefined
  username: string
  message?: Notice | undefined
}

export function codeStepPage (view: CodeStepView): string {
  return layout('Enter your code', view.brand, html`
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

export function signOutPage (view: Branded & { username?: string | undefined, rd?: string | undefined }): string {
  return layout('Sign out', view.brand, html`
<h1>Sign out</h1>
<p class="lead">${view.username === undefined ? 'You are not signed in.' : html`Signed in as <strong>${view.username}</strong>.`}</p>
<form method="post" action="/auth/signout" class="stack">
${redirectField(view.rd)}
<button type="submit" class="primary">Sign out</button>
</form>
`)
}

export interface MessageView extends Branded {
  /** The window's title and the page's heading. */
  title: string
  /** What happened, in words for the person in front of it. */
  text: string
  /** A line for whoever runs the application (an error code and its description), shown small. */
  detail?: string | undefined
}

/**
 * A page that sends the browser on at once (a refresh, no script) with a link for a browser that
 * does not follow it. A form's answer that redirects is held to the form page's CSP form-action
 * all along the redirects (Chromium), so a sign-in that must end on another origin (an OpenID
 * client's redirect_uri) goes on from here: a refresh is a navigation of its own, not the form's.
 */
export function continuePage (view: Branded & { title: string, text: string, href: string }): string {
  return layout(view.title, view.brand, html`
<h1>${view.title}</h1>
<p class="lead">${view.text}</p>
<p><a href="${view.href}" id="continue">Continue</a></p>
`, { refresh: view.href })
}

/** A page that only says something: a step that cannot go on, and why. */
export function messagePage (view: MessageView): string {
  return layout(view.title, view.brand, html`
<h1>${view.title}</h1>
<p class="notice error" role="alert" id="notice">${view.text}</p>
${view.detail === undefined ? html`` : html`<p class="hint" id="detail">${view.detail}</p>`}
<p class="aside"><a href="/auth/signin">Your account</a></p>
`)
}
