/**
 * Sessions: every Login token as a row a person can see and end by id (device, address,
 * created, refreshed), without ever showing the token.
 *
 * - `routes.ts`: GET/DELETE /auth/sessions, DELETE /auth/sessions/:id (the caller's own);
 *   `admin-routes.ts`: /admin/users/:username/sessions, /admin/sessions/:id;
 *   `session-owner.ts`: whose session an id is, for the admin route.
 * - `sessions.ts`: the interfaces (what Login records, what the routes list and end);
 *   `sql-sessions.ts`: the `sessions` table, ending rows and tokens together.
 * - `view.ts`: a session as the API shows it.
 *
 * Other slices use what this file exports, never the files behind it.
 */
export type { Sessions, SessionInfo } from './sessions.js'
