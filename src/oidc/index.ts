/**
 * Single sign-on: the OpenID Connect provider (api-contract, "Single sign-on: OpenID Connect
 * provider"); off unless AUTH_OIDC_ISSUER is set.
 *
 * - `signing-keys.ts`: the signing keys (RS256 and ES256) made by the service, sealed like the
 *   TOTP secrets, rotated on demand; the JWKS for the provider and its reload.
 * - `key-store.ts`: their table (Postgres and PGlite); `key-admin-routes.ts`: POST /admin/oidc/keys/rotate.
 *
 * Other slices use what this file exports, never the files behind it.
 */
export { rotatedKeysView, signingKeyAdminRoutes } from './key-admin-routes.js'
export { createSqlSigningKeyStore, SIGNING_ALGS, type SigningAlg, type SigningKeyStore } from './key-store.js'
export {
  createSigningKeys, jwkThumbprint, loadSigningKeys, RELOAD_EVERY_MS, SigningKeyUnreadable, watchSigningKeys,
  type PrivateSigningJwk, type RotatedKeys, type SigningJwks, type SigningKeys, type SigningKeyWatch
} from './signing-keys.js'
