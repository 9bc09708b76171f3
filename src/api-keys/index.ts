/**
 * API keys: long-lived secrets (`atsk_…`) for services and scripts, accepted wherever a Login
 * token is (Authenticate, /auth/verify, introspection, the guard) and shown as `keyId`.
 *
 * - `routes.ts`: GET/POST /auth/keys, DELETE /auth/keys/:id (the account's own keys; a new key
 *   asks for `current_password`); `admin-routes.ts`: /admin/users/:username/keys, /admin/keys/:id.
 * - `api-keys.ts`: the service (create with a per-account cap, page, revoke, end all of an
 *   account's in one batch, recover a record the token store lost, within `recovery-budget.ts`).
 * - `store.ts`: the `api_keys` table (Postgres and PGlite). The live records sit in the core's
 *   token store beside the tokens, where Authenticate's one read finds them.
 * - `views.ts`: a key as the API shows it, and the list cursor.
 *
 * Other slices use what this file exports, never the files behind it.
 */
export type { ApiKeys, KeyActor, CreatedKey, KeyPage } from './api-keys.js'
