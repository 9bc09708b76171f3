/**
 * Single sign-on: the OpenID Connect provider web apps sign people in with (api-contract,
 * "Single sign-on: OpenID Connect provider"; docs/single-sign-on.md). Off unless AUTH_OIDC_ISSUER
 * is set (src/config/parts/oidc.ts).
 *
 * - `clients.ts`: the clients operators register (create with their URLs checked and a
 *   confidential client's secret shown once, list, remove with every token they hold), and each
 *   client as oidc-provider's metadata (`metadataOf`); `client-uris.ts`: the URL rules;
 *   `client-secret.ts`: client ids, secrets and the secret's hash.
 * - `client-store.ts`: the `oidc_clients` table (Postgres and PGlite).
 * - `admin-routes.ts`: /admin/oidc/clients; `views.ts`: a client as the admin API and the CLI show it.
 *
 * Other slices use what this file exports, never the files behind it.
 */
export { createOidcClients, providerOff, type ClientActor, type CreatedClient, type NewClientInput, type OidcClientMetadata, type OidcClients, type OidcClientsDeps } from './clients.js'
export { createSqlOidcClientStore, type OidcClientRow, type OidcClientStore } from './client-store.js'
export { clientSecretMatches, hashClientSecret } from './client-secret.js'
export { clientAdminRoutes } from './admin-routes.js'
export { clientView, type ClientView } from './views.js'
