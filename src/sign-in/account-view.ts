import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../config/config.js'
import type { ApiKeys } from '../api-keys/index.js'
import type { Sessions } from '../sessions/index.js'
import type { SecondFactor } from '../totp/index.js'
import { hashToken } from '@auth-token-service/protocol/token'
import { accountPage } from './account-pages.js'
import { clientName, instant } from './display.js'
import type { Notice } from './pages.js'
import type { PasskeyStore } from './passkey-store.js'
import type { SignedIn, SignInContext } from './page-context.js'

export interface AccountViewDeps {
  config: Pick<Config, 'apiKeyMaxDays'>
  sessions: Pick<Sessions, 'list'>
  passkeys: Pick<PasskeyStore, 'listByAccount'>
  apiKeys: Pick<ApiKeys, 'page'>
  secondFactor: Pick<SecondFactor, 'isActive'>
  page: SignInContext['page']
  brandOf: SignInContext['brandOf']
}

/** Shows the account page as it is now, with a notice and a status (a refusal's). */
export type ViewAccount = (request: FastifyRequest, reply: FastifyReply, current: SignedIn, message?: Notice, status?: number) => Promise<FastifyReply>

/** The account page: its sessions, passkeys, second factor and API keys, read at once. */
export function createAccountView ({ config, sessions, passkeys, apiKeys, secondFactor, page, brandOf }: AccountViewDeps): ViewAccount {
  return async function view (request, reply, current, message, status = 200) {
    const { record } = current
    const [list, keys, active, keyPage] = await Promise.all([
      sessions.list(record.accountId, hashToken(current.token)),
      passkeys.listByAccount(record.accountId),
      secondFactor.isActive(record.accountId),
      apiKeys.page(record.accountId, undefined, 100)
    ])
    return page(reply, status, accountPage({
      brand: brandOf(request),
      username: record.username,
      expires: instant(record.expiresAt),
      federated: record.federated,
      message,
      sessions: list.map((session) => ({
        id: session.id,
        created: instant(session.created),
        expires: instant(session.expiresAt),
        ip: session.ip,
        client: clientName(session.userAgent),
        current: session.current
      })),
      passkeys: keys.map((key) => ({
        id: key.id,
        name: key.name,
        created: instant(key.createdAt.getTime()),
        lastUsed: key.lastUsedAt === null ? undefined : instant(key.lastUsedAt.getTime())
      })),
      totpActive: active,
      keys: keyPage.keys.map((key) => ({
        id: key.id,
        name: key.name,
        created: instant(key.createdAt.getTime()),
        expires: instant(key.expiresAt.getTime()),
        lastUsed: key.lastUsedAt === null ? undefined : instant(key.lastUsedAt.getTime())
      })),
      moreKeys: keyPage.next !== undefined,
      keyDefaultDays: Math.min(90, config.apiKeyMaxDays),
      keyMaxDays: config.apiKeyMaxDays
    }))
  }
}
