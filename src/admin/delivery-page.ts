import { badRequest } from '../errors/status.js'
import { reasons } from '../errors/reasons.js'
import { DEFAULT_PAGE } from './schemas.js'
import type { DeliveryFilter } from '../db/delivery-list.js'

/**
 * One page of an outbox's deliveries as the admin API pages them (GET /admin/webhooks/deliveries,
 * GET /admin/mail/deliveries): `cursor` is the last id of the page before, `next_cursor` null on the last page.
 */
export async function deliveryPage<S extends string, T extends { id: string }> (
  list: (filter: DeliveryFilter<S>) => Promise<T[]>,
  query: { status?: S | undefined, cursor?: string | undefined, limit?: number | undefined }
): Promise<{ page: T[], nextCursor: string | null }> {
  const { status, cursor } = query
  const limit = query.limit ?? DEFAULT_PAGE
  const afterId = cursor !== undefined && /^[0-9]{1,18}$/.test(cursor) ? cursor : undefined
  if (cursor !== undefined && afterId === undefined) throw badRequest(reasons.adminParameterNotValid('cursor'))
  const found = await list({ status, afterId, limit: limit + 1 })
  const page = found.slice(0, limit)
  return { page, nextCursor: found.length > limit ? page.at(-1)?.id ?? null : null }
}
