import type { ApiKeyRow } from './store.js'
import { isKeyIdShaped } from '../core/api-key-secret.js'
import { formatExpirationDate } from '../core/time.js'
import { dateOrNull, invalid } from '../admin/views.js'

/** A key as the self-service list and the admin API show it (api-contract.md, "API keys"). */

export function keyView (key: ApiKeyRow) {
  return {
    id: key.id,
    name: key.name,
    created: formatExpirationDate(key.createdAt.getTime()),
    expiration_date: formatExpirationDate(key.expiresAt.getTime()),
    last_used: dateOrNull(key.lastUsedAt)
  }
}

/** A key list's cursor: the id of the page's last key (ids are never reused; their order is by creation). */
export const encodeKeyCursor = (id: string): string => Buffer.from(id, 'utf8').toString('base64url')

export function decodeKeyCursor (cursor: string | undefined): string | undefined {
  if (cursor === undefined) return undefined
  const id = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : ''
  if (!isKeyIdShaped(id) || encodeKeyCursor(id) !== cursor) throw invalid('cursor')
  return id
}
