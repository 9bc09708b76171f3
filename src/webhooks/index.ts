/**
 * Webhooks: the lifecycle events of the contract sent to the configured URL, signed as Standard
 * Webhooks, at least once, in order per account, from an outbox in the user database.
 *
 * - The core's audit log writes each event's outbox row in the statement that writes the event
 *   (src/core/stores/audit-log.ts, with the catalog in src/core/events.ts): nothing is lost
 *   between the two. This slice reads the outbox and delivers.
 * - `start.ts`: the delivery loop a process starts; `deliverer.ts`, `post.ts`, `signature.ts`,
 *   `signal.ts` (a new row wakes it); `outbox.ts`: the `webhook_deliveries` table.
 * - `devices.ts`: the clients each account logged in from (`login.new_device`).
 * - `admin-routes.ts`: GET /admin/webhooks/deliveries, POST …/:id/retry.
 */
export { startWebhookDelivery } from './start.js'
export type { DeliveryView, WebhookOutbox } from './outbox.js'
