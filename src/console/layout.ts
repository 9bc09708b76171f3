import { ASSET_PATH, html, notice, type Markup, type Notice } from '../sign-in/index.js'

/**
 * The console's page frame: the sign-in pages' look (their stylesheet and icon) widened for
 * tables, a navigation of its sections, and no script at all: every action is a plain form.
 */

export const CONSOLE_PATH = '/console'
export const CONSOLE_ASSETS = `${CONSOLE_PATH}/assets`

export type Section = 'dashboard' | 'accounts' | 'clients' | 'events' | 'webhooks'

export interface Frame {
  title: string
  brand: string
  /** The signed-in admin. */
  username: string
  section: Section
  /** Whether the OpenID Connect provider is on (its clients' section shows). */
  oidc: boolean
  message?: Notice | undefined
}

const SECTIONS: Array<[Section, string, string]> = [
  ['dashboard', 'Dashboard', CONSOLE_PATH],
  ['accounts', 'Accounts', `${CONSOLE_PATH}/accounts`],
  ['clients', 'OpenID clients', `${CONSOLE_PATH}/clients`],
  ['events', 'Audit events', `${CONSOLE_PATH}/events`],
  ['webhooks', 'Deliveries', `${CONSOLE_PATH}/webhooks`]
]

/** A path segment of the console's URLs (a username, an id): encoded, as the router decodes it. */
export const segment = (value: string): string => encodeURIComponent(value)

export const accountPath = (username: string): string => `${CONSOLE_PATH}/accounts/${segment(username)}`

export function consolePage (frame: Frame, body: Markup): string {
  const links = SECTIONS
    .filter(([section]) => section !== 'clients' || frame.oidc)
    .map(([section, label, href]) => section === frame.section
      ? html`<li><a href="${href}" aria-current="page">${label}</a></li>`
      : html`<li><a href="${href}">${label}</a></li>`)
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${frame.title} · Admin console</title>
<link rel="icon" href="${ASSET_PATH}/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${ASSET_PATH}/signin.css">
<link rel="stylesheet" href="${CONSOLE_ASSETS}/console.css">
</head>
<body class="console">
<a class="skip" href="#content">Skip to content</a>
<header class="console-bar">
<div class="brand"><img class="logo" src="${ASSET_PATH}/icon.svg" alt="" width="28" height="28"><span id="brand">${frame.brand}</span><span class="tag">Admin console</span></div>
<nav aria-label="Console"><ul class="sections">${links}</ul></nav>
<form method="post" action="/auth/signout" class="who"><span class="meta" id="signed-in-user">${frame.username}</span><input type="hidden" name="rd" value="${CONSOLE_PATH}"><button type="submit" class="link">Sign out</button></form>
</header>
<main class="card console-card" id="content" tabindex="-1">
<h1>${frame.title}</h1>
${notice(frame.message)}
${body}
</main>
<footer class="foot">auth-token-service</footer>
</body>
</html>
`.html
}

/** A page of its own for who may not use the console, or for a step that cannot go on (no navigation: nothing else would open). */
export function plainPage (brand: string, title: string, text: string, links: Markup): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Admin console</title>
<link rel="icon" href="${ASSET_PATH}/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${ASSET_PATH}/signin.css">
<link rel="stylesheet" href="${CONSOLE_ASSETS}/console.css">
</head>
<body>
<main class="card">
<header class="brand"><img class="logo" src="${ASSET_PATH}/icon.svg" alt="" width="28" height="28"><span id="brand">${brand}</span></header>
<h1>${title}</h1>
<p class="notice error" role="alert" id="notice">${text}</p>
${links}
</main>
<footer class="foot">auth-token-service</footer>
</body>
</html>
`.html
}
