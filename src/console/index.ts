/**
 * The admin console: pages for the people who run accounts (docs/console.md), on the public
 * port behind the browser sign-in, for the members of AUTH_ADMIN_GROUP.
 *
 * - `routes.ts`: the plugin (the gate, the error pages, the routes); `gate.ts`: who is signed in
 *   and whether they may; `context.ts`: what every route shares (the acting admin for the audit
 *   trail, the confirm step of destructive actions).
 * - `account-routes.ts`, `record-routes.ts`: the actions, each the operation the admin API and the
 *   command line call (AccountAdmin, Sessions, ApiKeys, OidcClients, the webhook outbox).
 * - `layout.ts`, `account-pages.ts`, `record-pages.ts`, `dashboard-page.ts`, `confirm-page.ts`,
 *   `assets.ts`: the HTML and its stylesheet, no HTTP; the sign-in pages' frame and escaping.
 */
export { consoleRoutes, type ConsoleRoutesOptions } from './routes.js'
export { CONSOLE_CREDENTIAL } from './context.js'
