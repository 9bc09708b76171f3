import { unauthorized } from '../../errors/status.js'
import { hashToken, isTokenShaped } from '@auth-token-service/protocol/token'
import type { AuditLog } from '../stores/audit-log.js'
import type { TokenStore } from '../stores/token-store.js'
import type { OutcomeOf } from '../events.js'
import type { SessionRecorder } from '../ports.js'
import type { AuthService } from './types.js'

export interface LogoutDeps {
  tokens: TokenStore
  audit: AuditLog
  /** Where the token's session goes; absent: none kept. */
  sessions?: SessionRecorder | undefined
}

/** Logout: the token ended in the token store (deny set and revocation feed), its session gone, audited. */
export function createLogout ({ tokens, audit, sessions }: LogoutDeps): AuthService['logout'] {
  return async function logout (token, client) {
    if (token === undefined || !isTokenShaped(token)) throw unauthorized()
    const tokenHash = hashToken(token)
    const ended = await tokens.terminate(tokenHash)
    if (ended === null) throw unauthorized()
    // Not awaited: Logout works while Postgres is away (the row is never listed once its token is gone).
    sessions?.ended([tokenHash]).catch(() => {})
    audit.record({
      event: 'logout',
      username: ended.username,
      accountId: ended.accountId,
      clientIp: client.ip,
      userAgent: client.userAgent,
      outcome: 'terminated' satisfies OutcomeOf<'logout'>,
      tokensEnded: 1
    })
  }
}
