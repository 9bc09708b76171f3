import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { StatusError } from '../errors/status.js'
import { reasons } from '../errors/reasons.js'
import { AdminErrorSchema, Cursor, DeliveryPathSchema, Limit, NextCursor, success } from '../admin/schemas.js'
import { OK } from '../admin/views.js'
import { deliveryPage } from '../admin/delivery-page.js'
import type { MailOutbox, MailView } from './store.js'

const NULLABLE_TIME = (description: string) => Type.Union([Type.String({ description: `${description}: ISO 8601, UTC` }), Type.Null()])
const STATUS = Type.Union([Type.Literal('pending'), Type.Literal('failed'), Type.Literal('delivered')])

export const MailDeliveriesQuerySchema = Type.Object({
  status: Type.Optional(Type.Union([Type.Literal('pending'), Type.Literal('failed'), Type.Literal('delivered')], { description: 'Only mail in this state' })),
  limit: Limit,
  cursor: Cursor
}, { additionalProperties: false })

export const MailDeliverySchema = Type.Object({
  id: Type.String({ description: 'The mail (one link to one address)' }),
  kind: Type.Union([Type.Literal('reset'), Type.Literal('invite')]),
  username: Type.String(),
  to: Type.String({ description: 'The address it goes to' }),
  status: STATUS,
  attempts: Type.Integer(),
  created: Type.String({ description: 'When it was queued: ISO 8601, UTC' }),
  next_attempt: NULLABLE_TIME('When it is tried next (pending only)'),
  delivered: NULLABLE_TIME('When the SMTP server took it'),
  last_error: Type.Union([Type.String(), Type.Null()], { description: 'What the last failed attempt met (an SMTP reply, a timeout, a refused connection), addresses\' local parts left out' })
})

const MailDeliveryListAnswerSchema = success({ deliveries: Type.Array(MailDeliverySchema), next_cursor: NextCursor }, 'A page of recovery and invitation mail, oldest first')
const MailRetryAnswerSchema = Type.Object({ status: Type.Literal(0), message: Type.Literal('Success') }, { description: 'The mail is pending again, due now' })

const unknownDelivery = (): StatusError => new StatusError(404, 'Not Found', 404, {}, { detail: reasons.noSuchMailDelivery() })

function mailView (mail: MailView) {
  return {
    id: mail.id,
    kind: mail.kind,
    username: mail.username,
    to: mail.recipient,
    status: mail.status,
    attempts: mail.attempts,
    created: mail.created.toISOString(),
    next_attempt: mail.nextAttempt?.toISOString() ?? null,
    delivered: mail.deliveredAt?.toISOString() ?? null,
    last_error: mail.lastError
  }
}

/** GET /admin/mail/deliveries and POST /admin/mail/deliveries/{id}/retry (docs/recovery.md), as the webhook ones. */
export const mailAdminRoutes: FastifyPluginAsyncTypebox<{ outbox: MailOutbox }> = async (app, { outbox }) => {
  const errors = { '4xx': AdminErrorSchema, '5xx': AdminErrorSchema }
  app.get('/mail/deliveries', {
    schema: { summary: 'Recovery and invitation mail, oldest first, a page at a time', querystring: MailDeliveriesQuerySchema, response: { 200: MailDeliveryListAnswerSchema, ...errors } }
  }, async (request) => {
    const { page, nextCursor } = await deliveryPage(async (filter) => await outbox.list(filter), request.query)
    return { ...OK, deliveries: page.map(mailView), next_cursor: nextCursor }
  })
  app.post('/mail/deliveries/:id/retry', {
    schema: { summary: 'Send a pending or failed mail now, while its link still works', params: DeliveryPathSchema, response: { 200: MailRetryAnswerSchema, ...errors } }
  }, async (request) => {
    if (!await outbox.retry(request.params.id)) throw unknownDelivery()
    return OK
  })
}
