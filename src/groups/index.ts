/**
 * Groups: who may do what (api-contract, Groups and access rules). The membership itself, its
 * rules and its way to the live tokens are the core's (core/groups.ts, core/group-names.ts,
 * core/stores/group-store.ts, the token store's regroup), since Login, Authenticate and
 * /auth/verify carry groups; this slice is how people change and read them.
 *
 * - `admin-routes.ts`: PUT /admin/users/:username/groups, GET /admin/groups, GET /admin/groups/:group.
 *
 * Other slices use what this file exports, never the files behind it.
 */
export { groupAdminRoutes } from './admin-routes.js'
