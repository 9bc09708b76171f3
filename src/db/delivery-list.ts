/** What an outbox (webhook deliveries, mail) lists: by status, after an id, oldest first, up to a limit. */
export interface DeliveryFilter<S extends string> {
  status?: S | undefined
  afterId?: string | undefined
  limit: number
}

/** An outbox's list query: its WHERE clause (by status, after an id) and its parameters, the limit last. */
export function deliveryListQuery<S extends string> ({ status, afterId, limit }: DeliveryFilter<S>): { where: string, limit: string, params: unknown[] } {
  const where: string[] = []
  const params: unknown[] = []
  if (status !== undefined) { params.push(status); where.push(`status = $${params.length}`) }
  if (afterId !== undefined) { params.push(afterId); where.push(`id > $${params.length}`) }
  params.push(limit)
  return { where: where.length > 0 ? `WHERE ${where.join(' AND ')}` : '', limit: `$${params.length}`, params }
}
