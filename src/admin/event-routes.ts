import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { normalizeUsername } from '../core/credentials.js'
import type { AuditLog } from '../core/stores/audit-log.js'
import { AdminErrorSchema, DEFAULT_PAGE, EventListAnswerSchema, EventsQuerySchema } from './schemas.js'
import { decodeEventCursor, encodeEventCursor, eventView, OK, parseSince } from './views.js'

/** GET /admin/events: the audit trail, oldest first, with the filters of the command line's `events`. */
export const eventRoutes: FastifyPluginAsyncTypebox<{ audit: AuditLog }> = async (app, { audit }) => {
  app.get('/events', {
    schema: {
      summary: 'The audit trail, oldest first, a page at a time',
      querystring: EventsQuerySchema,
      response: { 200: EventListAnswerSchema, '4xx': AdminErrorSchema, '5xx': AdminErrorSchema }
    }
  }, async (request) => {
    const { user, since, event, cursor } = request.query
    const limit = request.query.limit ?? DEFAULT_PAGE
    // Events written a moment ago (this API's own, a Login's) are in the answer.
    await audit.flush()
    const found = await audit.list({
      username: user === undefined ? undefined : normalizeUsername(user),
      since: parseSince(since),
      event,
      after: decodeEventCursor(cursor),
      limit: limit + 1
    })
    const page = found.slice(0, limit)
    const last = page.at(-1)
    return { ...OK, events: page.map(eventView), next_cursor: found.length > limit && last !== undefined ? encodeEventCursor(last) : null }
  })
}
