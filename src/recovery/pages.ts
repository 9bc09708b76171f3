import { html, layout, notice, type Markup, type Notice } from '../sign-in/index.js'
import type { LinkPage } from './recovery.js'

/**
 * The recovery pages, in the sign-in pages' frame (their layout, style and escaping; the same
 * headers: routes.ts): forms that work without JavaScript, labelled fields with the standard
 * autocomplete values, no inline script or style.
 */

const backToSignIn = html`<p class="aside"><a href="/auth/signin">Back to sign in</a></p>`

export function requestPage (view: { brand: string, identifier?: string | undefined, message?: Notice | undefined }): string {
  return layout('Reset your password', view.brand, html`
<h1>Forgot your password?</h1>
<p class="lead">Enter your username or the email address of your account. If the account can be reset by email, a link to choose a new password goes to its address.</p>
${notice(view.message)}
<form method="post" action="/auth/reset" class="stack">
<label for="identifier">Username or email</label>
<input id="identifier" name="identifier" type="text" autocomplete="username" autocapitalize="none" spellcheck="false" maxlength="320" required autofocus value="${view.identifier ?? ''}">
<button type="submit" class="primary">Send the link</button>
</form>
${backToSignIn}
`)
}

/** The answer to every reset request, whether or not an account matched. */
export function sentPage (view: { brand: string, validFor: string }): string {
  return layout('Check your email', view.brand, html`
<h1>Check your email</h1>
<p class="notice info" role="status" id="notice">If an account matches what you entered and can be reset by email, a link to choose a new password is on its way to the account's address.</p>
<p class="lead">The link works for ${view.validFor}, once. Nothing arrived? Look in the spam folder, or ask again in a few minutes; a new link replaces the one before.</p>
${backToSignIn}
`)
}

export function setPasswordPage (view: { brand: string, action: string, link: LinkPage, message?: Notice | undefined }): string {
  const invite = view.link.kind === 'invite'
  const code: Markup = view.link.needsCode
    ? html`
<label for="otp">Code</label>
<input id="otp" name="otp" type="text" inputmode="numeric" autocomplete="one-time-code" autocapitalize="none" spellcheck="false" maxlength="64" required>
<p class="hint">The 6-digit code from your authenticator app, or one of your recovery codes.</p>`
    : html``
  return layout(invite ? 'Set your password' : 'Choose a new password', view.brand, html`
<h1>${invite ? 'Set your password' : 'Choose a new password'}</h1>
<p class="lead">For the account <strong>${view.link.username}</strong>.${invite ? '' : ' Every session of the account ends when the new password is set.'}</p>
${notice(view.message)}
<form method="post" action="${view.action}" class="stack">
<input type="text" name="username" autocomplete="username" value="${view.link.username}" hidden readonly>
<label for="new_password">New password</label>
<input id="new_password" name="new_password" type="password" autocomplete="new-password" required autofocus>
${code}
<button type="submit" class="primary">${invite ? 'Set password' : 'Set new password'}</button>
</form>
`)
}

export function donePage (view: { brand: string, username: string, invite: boolean }): string {
  return layout('Password set', view.brand, html`
<h1>Password set</h1>
<p class="notice info" role="status" id="notice">${view.invite ? html`The password of <strong>${view.username}</strong> is set.` : html`The password of <strong>${view.username}</strong> is changed, and the account's sessions have ended.`}</p>
<p><a href="/auth/signin" id="continue">Sign in</a></p>
`)
}

/** A link that cannot be used: unknown, used, expired or replaced by a newer one. Which, it does not say. */
export function invalidLinkPage (view: { brand: string }): string {
  return layout('Link not valid', view.brand, html`
<h1>This link does not work</h1>
<p class="notice error" role="alert" id="notice">It was used already, it expired, or a newer link replaced it. Nothing was changed.</p>
<p><a href="/auth/reset">Ask for a new link</a></p>
${backToSignIn}
`)
}
