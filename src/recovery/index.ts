/**
 * Account recovery by email (docs/recovery.md): a forgotten password reset through a mailed
 * single-use link, and invitations that set a first password.
 *
 * - `routes.ts`: GET/POST /auth/reset and /auth/reset/:secret; `pages.ts`: their HTML, in the
 *   sign-in pages' frame; `admin-routes.ts`: GET /admin/mail/deliveries, POST …/:id/retry.
 * - `recovery.ts`: the service (requests matched and queued after the answer, links checked and
 *   used once, the password set as a password change sets it); `links.ts`: secrets and URLs.
 * - `store.ts`: the `reset_links` and `mail_deliveries` tables; `worker.ts`, `mailer.ts`,
 *   `messages.ts`: the outbox's delivery through nodemailer, as the webhook worker does it.
 * - `start.ts`: the worker wired to the log.
 *
 * Other slices use what this file exports.
 */
export { createInvitationSender, createRecovery, type Recovery } from './recovery.js'
export { createSqlMailOutbox, createSqlRecoveryStore, type MailOutbox, type MailView } from './store.js'
export { recoveryRoutes } from './routes.js'
export { mailAdminRoutes } from './admin-routes.js'
export { startMailDelivery } from './start.js'
