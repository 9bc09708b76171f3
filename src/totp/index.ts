/**
 * The second factor: TOTP (RFC 6238) with single-use recovery codes, asked for at Login of an
 * account that has one (702 without it, 701 counted when wrong).
 *
 * - `routes.ts`: POST /auth/totp (enroll; asks for `current_password`), POST /auth/totp/confirm,
 *   DELETE /auth/totp; `admin-routes.ts`: DELETE /admin/users/:username/totp (a lost authenticator).
 * - `second-factor.ts`: the service (enroll, confirm, verify at Login, remove), audited;
 *   `rfc6238.ts` the codes; `recovery-codes.ts`; `sealed-secret.ts`, `keys.ts`, `key-file.ts`: secrets
 *   sealed at rest under keys from the environment or a key file.
 * - `store.ts`: the `totp` columns and recovery codes (Postgres and PGlite).
 *
 * The sealing (AES-256-GCM under AUTH_TOTP_KEY, its predecessors opening what they sealed) is
 * exported too: other secrets kept in the database under the same keys (the OpenID provider's
 * signing keys) are sealed with it, each with associated data of its own.
 *
 * Other slices use what this file exports, never the files behind it.
 */
export type { SecondFactor } from './second-factor.js'
export { otpauthUri } from './rfc6238.js'
export { keyId, openSecret, sealedKeyId, sealSecret, type OpenedSecret, type TotpKeys } from './sealed-secret.js'
export { totpKeySource } from './keys.js'
