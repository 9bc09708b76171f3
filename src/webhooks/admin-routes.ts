import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { badRequest, StatusError } from '../errors/status.js'
import { reasons } from '../errors/reasons.js'
import type { DeliveryView, WebhookOutbox } from './outbox.js'
import { AdminErrorSchema, DEFAULT_PAGE, DeliveriesQuerySchema, DeliveryListAnswerSchema, DeliveryPathSchema, DeliveryRetryAnswerSchema } from '../admin/schemas.js'
import { OK } from '../admin/views.js'

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
    const { status, cursor } = request.query
    const limit = request.query.limit ?? DEFAULT_PAGE
    const afterId = cursor !== undefined && /^[0-9]{1,18}$/.test(cursor) ? cursor : undefined
    if (cursor !== undefined && afterId === undefined) throw badRequest(reasons.adminParameterNotValid('cursor'))
    const found = await outbox.list({ status, afterId, limit: limit + 1 })
    const page = found.slice(0, limit)
    return { ...OK, deliveries: page.map(deliveryView), next_cursor: found.length > limit ? page.at(-1)?.id ?? null : null }
  })
  app.post('/webhooks/deliveries/:id/retry', {
    schema: { summary: 'Try a failed delivery again now, with a fresh retry window', params: DeliveryPathSchema, response: { 200: DeliveryRetryAnswerSchema, ...errors } }
  }, async (request) => {
    if (!await outbox.retry(request.params.id)) throw unknownDelivery()
    return OK
  })
}
