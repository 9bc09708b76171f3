import type { SessionItem } from '../core/schemas.js'
import { formatExpirationDate } from '../core/time.js'
import type { SessionInfo } from './sessions.js'

/** A session as the API shows it: the self-service list (GET /auth/sessions) and the admin API alike. */
export function sessionItem (session: SessionInfo): SessionItem {
  return {
    id: session.id,
    created: formatExpirationDate(session.created),
    refreshed: session.refreshed === null ? null : formatExpirationDate(session.refreshed),
    expiration_date: formatExpirationDate(session.expiresAt),
    ip: session.ip,
    user_agent: session.userAgent,
    federated: session.federated,
    current: session.current
  }
}

/** As the self-service list shows a session; the admin presents no token of the account, so none is the caller's. */
export function sessionView (session: SessionInfo): SessionItem {
  return { ...sessionItem(session), current: false }
}
