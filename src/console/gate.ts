import type { FastifyRequest } from 'fastify'
import type { AuthService } from '../core/auth.js'
import { StatusError } from '../errors/status.js'
import { cookieToken } from '@auth-token-service/protocol/token-source'
import type { TokenRecord } from '@auth-token-service/protocol/layout'

/**
 * Who is at the console: the browser's own sign-in (the `AuthToken1` cookie, the sign-in pages'
 * way in, so the second factor and passkeys apply), and whether its account is in the admin
 * group. Only a Login token opens it: an API key is never a cookie, and an OpenID Connect access
 * token (an application's, for an application) is refused as if absent.
 */

export type Visitor =
  | { kind: 'anonymous' }
  | { kind: 'outsider', username: string }
  | { kind: 'admin', username: string, accountId: string }

export interface Gate {
  visitor (request: FastifyRequest): Promise<Visitor>
}

export function createGate (auth: Pick<AuthService, 'authenticate'>, adminGroup: string): Gate {
  return {
    async visitor (request) {
      const token = cookieToken(request.headers.cookie)
      // Absent, or several values of the cookie (ambiguous: never first-wins).
      if (typeof token !== 'string') return { kind: 'anonymous' }
      let record: TokenRecord
      try {
        record = await auth.authenticate(token)
      } catch (error) {
        if (error instanceof StatusError && error.status === 403) return { kind: 'anonymous' }
        throw error
      }
      if (record.keyId !== undefined || record.oidc !== undefined) return { kind: 'anonymous' }
      // The record carries the account's groups as they are now: a removal from the group shuts the console at once.
      if (!(record.groups ?? []).includes(adminGroup)) return { kind: 'outsider', username: record.username }
      return { kind: 'admin', username: record.username, accountId: record.accountId }
    }
  }
}
