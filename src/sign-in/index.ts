/**
 * Browser sign-in: the pages a person uses (docs/browser-sign-in.md) — the sign-in form with
 * `rd` redirects for gateways, the code step of an account with a second factor, passkeys
 * (WebAuthn through @simplewebauthn/server), the signed-in page and the account page (password,
 * second factor, passkeys, keys, sessions).
 *
 * - `routes.ts`: the sign-in routes under /auth/signin; `account-routes.ts`: /auth/account/….
 * - `pages.ts`, `account-pages.ts`, `html.ts`, `display.ts`, `qr.ts`, `assets.ts`: the HTML, no HTTP.
 * - `passkeys.ts`: the ceremonies; `passkey-store.ts`: the `passkeys` table; `pending-store.ts`:
 *   a sign-in half done (a challenge, a code step), in process or on Redis; `redirect.ts`: the rd check.
 *
 * The composition root registers it; it is the one slice that shows other slices' data (keys,
 * sessions, the second factor), through their index files. Its page frame (`messagePage`,
 * `continuePage`, the layout, the escaping template and notices, the pages' headers and brand) is
 * what another slice's page uses to look and be guarded the same (the OpenID provider's error,
 * continue, device and logout pages, and the admin console).
 */
export { signInRoutes, type SignInRoutesOptions } from './routes.js'
export { ASSET_PATH, continuePage, layout, messagePage, notice, type MessageView, type Notice } from './pages.js'
export { clientName, instant } from './display.js'
export { html, Markup } from './html.js'
export { brandFor, pageHeaders } from './page-context.js'
export { tooManyAttempts } from './display.js'
