import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { StatusError } from '../errors/status.js'
import { reasons } from '../errors/reasons.js'
import type { DeliveryView, WebhookOutbox } from './outbox.js'
import { AdminErrorSchema, DeliveriesQuerySchema, DeliveryListAnswerSchema, DeliveryPathSchema, DeliveryRetryAnswerSchema } from '../admin/schemas.js'
import { OK } from '../admin/views.js'
import { deliveryPage } from '../admin/delivery-page.js'

const unknownDelivery = (): StatusError => new StatusError(404, 'Not Found', 404, {}, { detail: reasons.noSuchDelivery() })

function deliveryView (delivery: DeliveryView) {
  return {
    id: delivery.id,
    webhook_id: delivery.eventId,
    type: delivery.type,
    url: delivery.url,
    status: delivery.status,
    attempts: delivery.attempts,
    created: delivery.created.toISOString(),
    next_attempt: delivery.nextAttempt?.toISOString() ?? null,
    delivered: delivery.deliveredAt?.toISOString() ?? null,
    last_error: delivery.lastError
  }
}

/** GET /admin/webhooks/deliveries and POST /admin/webhooks/deliveries/{id}/retry (docs/webhooks.md). */
export const webhookRoutes: FastifyPluginAsyncTypebox<{ outbox: WebhookOutbox }> = async (app, { outbox }) => {
  const errors = { '4xx': AdminErrorSchema, '5xx': AdminErrorSchema }
  app.get('/webhooks/deliveries', {
    schema: { summary: 'Webhook deliveries, oldest first, a page at a time', querystring: DeliveriesQuerySchema, response: { 200: DeliveryListAnswerSchema, ...errors } }
  }, async (request) => {
    const { page, nextCursor } = await deliveryPage(async (filter) => await outbox.list(filter), request.query)
    return { ...OK, deliveries: page.map(deliveryView), next_cursor: nextCursor }
  })
  app.post('/webhooks/deliveries/:id/retry', {
    schema: { summary: 'Try a failed delivery again now, with a fresh retry window', params: DeliveryPathSchema, response: { 200: DeliveryRetryAnswerSchema, ...errors } }
  }, async (request) => {
    if (!await outbox.retry(request.params.id)) throw unknownDelivery()
    return OK
  })
}
