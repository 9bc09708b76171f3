import { html, layout, notice, type Markup, type Notice } from '../sign-in/index.js'

/**
 * The provider's own pages, in the sign-in page's style and frame: the device flow's (enter the
 * code, check it and allow, done) and RP-initiated logout's (sign out?, signed out). Forms that work
 * without JavaScript; every value escaped by the template. No HTTP here (page-sources.ts serves
 * them; pages.ts holds the provider's error and continue pages).
 */

/** What every form of the provider carries: where it posts and its anti-forgery value. */
export interface ProviderForm {
  action: string
  xsrf: string
}

const hidden = (name: string, value: string): Markup => html`<input type="hidden" name="${name}" value="${value}">`

export interface UserCodeView {
  brand: string
  form: ProviderForm
  /** The code typed (or carried by the verification link), to show again. */
  code?: string | undefined
  message?: Notice | undefined
}

export function userCodePage (view: UserCodeView): string {
  return layout('Connect a device', view.brand, html`
<h1>Connect a device</h1>
<p class="lead">Enter the code your device or command-line tool shows.</p>
${notice(view.message)}
<form method="post" action="${view.form.action}" class="stack">
${hidden('xsrf', view.form.xsrf)}
<label for="user_code">Code</label>
<input id="user_code" name="user_code" type="text" class="user-code" autocomplete="off" autocapitalize="characters" spellcheck="false" maxlength="64" required autofocus value="${view.code ?? ''}">
<button type="submit" class="primary">Continue</button>
</form>
`)
}

export interface ConfirmDeviceView {
  brand: string
  form: ProviderForm
  clientName: string
  /** The code as the device shows it (with its dash). */
  userCode: string
  /** Who is signed in in this browser; undefined: the sign-in page comes next. */
  username?: string | undefined
  /** Where the device asked from, as the provider saw it. */
  device: { ip?: string | undefined, userAgent?: string | undefined }
}

export function confirmDevicePage (view: ConfirmDeviceView): string {
  const from = [view.device.ip, view.device.userAgent].filter((part): part is string => part !== undefined && part !== '').join(' · ')
  return layout('Connect a device', view.brand, html`
<h1>Connect a device</h1>
<p class="lead"><strong>${view.clientName}</strong> asks to use your account${view.username === undefined ? '' : html` <strong>${view.username}</strong>`}.</p>
<p>Allow it only if your device shows this code:</p>
<p class="user-code" id="user-code">${view.userCode}</p>
${from === '' ? html`` : html`<p class="hint">Asked from ${from}</p>`}
<form method="post" action="${view.form.action}" class="stack">
${hidden('xsrf', view.form.xsrf)}${hidden('user_code', view.userCode)}${hidden('confirm', 'yes')}
<button type="submit" class="primary">${view.username === undefined ? 'Sign in and allow' : 'Allow'}</button>
</form>
<form method="post" action="${view.form.action}" class="stack">
${hidden('xsrf', view.form.xsrf)}${hidden('user_code', view.userCode)}${hidden('abort', 'yes')}
<button type="submit" class="secondary">Deny</button>
</form>
<p class="aside">Did not start this on a device of yours, or the code differs? Deny.</p>
`)
}

export function deviceDonePage (view: { brand: string, clientName: string }): string {
  return layout('Device connected', view.brand, html`
<h1>Device connected</h1>
<p class="lead"><strong>${view.clientName}</strong> is signed in. You can close this page and go back to your device.</p>
<p class="aside">Signing out here signs the device out too.</p>
`)
}

export interface LogoutView {
  brand: string
  form: ProviderForm
  /** The client that sent the person here, when it said which it is. */
  clientName?: string | undefined
  username?: string | undefined
}

export function logoutPage (view: LogoutView): string {
  return layout('Sign out', view.brand, html`
<h1>Sign out</h1>
<p class="lead">${view.clientName === undefined ? 'An app' : html`<strong>${view.clientName}</strong>`} asks to sign you out${view.username === undefined ? '' : html` of <strong>${view.username}</strong>`}.</p>
<p>Signing out ends your sign-in here and in every app you signed into with it.</p>
<form method="post" action="${view.form.action}" class="stack">
${hidden('xsrf', view.form.xsrf)}${hidden('logout', 'yes')}
<button type="submit" class="primary">Sign out</button>
</form>
<p class="aside"><a href="/auth/signin">Stay signed in</a></p>
`)
}

export function signedOutPage (view: { brand: string, clientName?: string | undefined }): string {
  return layout('Signed out', view.brand, html`
<h1>Signed out</h1>
<p class="lead">You are signed out here${view.clientName === undefined ? ' and in every app that used this sign-in' : html`, in <strong>${view.clientName}</strong> and in every other app that used this sign-in`}.</p>
<p class="aside"><a href="/auth/signin">Sign in again</a></p>
`)
}

/** A logout asked for while no one is signed in here: nothing to confirm; the button goes on (back to the client, when it said where). */
export function notSignedInPage (view: { brand: string, form: ProviderForm, clientName?: string | undefined }): string {
  return layout('Signed out', view.brand, html`
<h1>Signed out</h1>
<p class="lead">No one is signed in here${view.clientName === undefined ? '' : html` for <strong>${view.clientName}</strong>`}.</p>
<form method="post" action="${view.form.action}" class="stack">
${hidden('xsrf', view.form.xsrf)}${hidden('logout', 'yes')}
<button type="submit" class="primary">Continue</button>
</form>
`)
}
