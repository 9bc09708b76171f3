/**
 * Single sign-on: the OpenID Connect provider web apps sign people in with (api-contract,
 * "Single sign-on: OpenID Connect provider"; docs/single-sign-on.md). Off unless AUTH_OIDC_ISSUER
 * is set (src/config/parts/oidc.ts).
 *
 * - `service.ts`: the provider assembled from the backends and registered on the public app;
 *   `provider.ts`: oidc-provider configured as the contract says; `routes.ts`: its mount and the
 *   interaction that signs a person in through the service's sign-in page; `adapter.ts`: its
 *   storage over the service's stores (`artifact-store.ts`; `access-tokens.ts`: access tokens as
 *   the service's own tokens; `sign-in-links.ts`: which sign-in token each provider session stands on,
 *   and the other way); `sign-in-token.ts`: the browser's sign-in from its AuthToken1, as every
 *   part of the provider reads it; `pages.ts`: its error page and the continue page after a sign-in, in the
 *   sign-in pages' frame; `flow-pages.ts`, `page-sources.ts`: the device flow's and the logout's
 *   pages, in the same; `provider-hooks.ts`: what the service adds around the provider's routes (the
 *   `oidc.authorized` event, the sign-out of the service at an RP-initiated logout);
 *   `backchannel-logout.ts`: logout tokens to the clients when a sign-in ends, any way it ends;
 *   `provider-log.ts`: its failures and refusals in the service's log.
 * - `clients.ts`: the clients operators register (create with their URLs checked and a
 *   confidential client's secret shown once, list, remove with every token they hold), and each
 *   client as oidc-provider's metadata (`metadataOf`); `client-uris.ts`: the URL rules;
 *   `client-secret.ts`: client ids, secrets and the secret's hash.
 * - `client-store.ts`: the `oidc_clients` table (Postgres and PGlite).
 * - `admin-routes.ts`: /admin/oidc/clients; `views.ts`: a client as the admin API and the CLI show it.
 * - `signing-keys.ts`: the signing keys (RS256 and ES256) made by the service, sealed like the
 *   TOTP secrets, rotated on demand; the JWKS for the provider and its reload.
 * - `key-store.ts`: their table (Postgres and PGlite); `key-admin-routes.ts`: POST /admin/oidc/keys/rotate.
 *
 * Other slices use what this file exports, never the files behind it.
 */
export { createOidcClients, providerOff, type ClientActor, type CreatedClient, type NewClientInput, type OidcClientMetadata, type OidcClients, type OidcClientsDeps } from './clients.js'
export { createClientRemovals, type ClientRemovals } from './client-removals.js'
export { createSqlOidcClientStore, type OidcClientRow, type OidcClientStore } from './client-store.js'
export { clientSecretMatches, hashClientSecret } from './client-secret.js'
export { clientAdminRoutes } from './admin-routes.js'
export { clientView, type ClientView } from './views.js'
export { rotatedKeysView, signingKeyAdminRoutes } from './key-admin-routes.js'
export { createSqlSigningKeyStore, SIGNING_ALGS, type SigningAlg, type SigningKeyStore } from './key-store.js'
export {
  createSigningKeys, jwkThumbprint, loadSigningKeys, RELOAD_EVERY_MS, SigningKeyUnreadable, watchSigningKeys,
  type PrivateSigningJwk, type RotatedKeys, type SigningJwks, type SigningKeys, type SigningKeyWatch
} from './signing-keys.js'
export { artifactStoreOf, clientRemovalsOf, endClientTokens, registerOidc, type OidcServiceDeps } from './service.js'
