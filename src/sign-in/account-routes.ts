import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { AuthService } from '../core/auth.js'
import type { Config } from '../config/config.js'
import { StatusError } from '../errors/status.js'
import { refuseOtherMethods } from '../http/methods.js'
import type { ApiKeys } from '../api-keys/index.js'
import type { Sessions } from '../sessions/index.js'
import { ACCOUNT_PATH } from './account-pages.js'
import type { PasskeyStore } from './passkey-store.js'
import type { UserStore } from '../core/stores/user-store.js'
import type { SecondFactor } from '../totp/index.js'
import { noticeFor } from './account-notices.js'
import { createAccountView, type ViewAccount } from './account-view.js'
import { registerKeyActions, registerPasswordAction, registerSessionActions, registerTotpActions, type AccountActionKit, type ActionHandler } from './account-actions.js'
import type { SignedIn, SignInContext } from './page-context.js'

/**
 * The account page's actions: plain forms posted to /auth/account/…, each an adapter of the
 * operation the JSON routes use (sessions, auth.changePassword, auth.stepUp, secondFactor,
 * apiKeys), never a second implementation. What changes nothing secret answers 303 back to the
 * page with a notice (Post/Redirect/Get); what shows a secret once (a second factor's key and
 * recovery codes, a new API key) is a page of its own, never cached (every /auth answer is
 * no-store). What outlives the token asks for the password again, as the contract's JSON routes do.
 */

export interface AccountRoutesDeps {
  auth: AuthService
  config: Pick<Config, 'apiKeyMaxDays' | 'totpIssuer'>
  sessions: Sessions
  passkeys: PasskeyStore
  apiKeys: ApiKeys
  secondFactor: SecondFactor
  users: Pick<UserStore, 'findByUsername'>
  /** The browser's active Login token and its record, or undefined. */
  signedIn: SignInContext['signedIn']
  /** An HTML answer with the pages' headers (CSP, frame and referrer rules). */
  page: SignInContext['page']
  brandOf: SignInContext['brandOf']
  /** The browser's own session ended: its cookie goes. */
  clearToken: (reply: FastifyReply) => void
}

export interface AccountPages {
  /** The account page, as it is now. */
  view: ViewAccount
  /** A refusal made before an action's handler ran, as the account page; undefined when not signed in. */
  refusal: (request: FastifyRequest, reply: FastifyReply, error: StatusError) => Promise<FastifyReply | undefined>
}

export function registerAccountRoutes (pages: FastifyInstance, deps: AccountRoutesDeps): AccountPages {
  const { auth, signedIn, page, brandOf } = deps
  const view = createAccountView(deps)
  const paths: string[] = []

  /**
   * An action of the signed-in person: without an active token, back to the sign-in page; a
   * refusal (a wrong password, a limit, a backend, the cross-site rule) is the account page
   * with a message and the operation's status (701 is a 401, as at Login).
   */
  function action (path: string, handler: ActionHandler, wrong?: string): void {
    paths.push(path)
    pages.post(`${ACCOUNT_PATH}${path}`, { schema: { hide: true } }, async (request, reply) => {
      const current = await signedIn(request)
      if (current === undefined) return await reply.code(303).header('location', '/auth/signin').send()
      try {
        return await handler(request, reply, current)
      } catch (error) {
        if (!(error instanceof StatusError) || error.status === 500) throw error
        reply.headers(error.headers)
        // The token may have ended under the action (a password change elsewhere): sign in again.
        const still = await signedIn(request)
        if (still === undefined) return await reply.code(303).header('location', '/auth/signin').send()
        return await view(request, reply, still, noticeFor(error, wrong), error.httpStatus)
      }
    })
  }

  const kit: AccountActionKit = {
    action,
    say: async (request: FastifyRequest, reply: FastifyReply, current: SignedIn, text: string, status = 400): Promise<FastifyReply> =>
      await view(request, reply, current, { kind: 'error', text }, status),
    page,
    brandOf
  }
  registerSessionActions(kit, deps)
  registerPasswordAction(kit, auth)
  registerTotpActions(kit, deps)
  registerKeyActions(kit, deps)
  for (const path of paths) refuseOtherMethods(pages, `${ACCOUNT_PATH}${path}`, ['POST'])

  /** A refusal before the handler (the cross-site rule): the page with its message when signed in. */
  async function refusal (request: FastifyRequest, reply: FastifyReply, error: StatusError): Promise<FastifyReply | undefined> {
    const current = await signedIn(request)
    if (current === undefined) return undefined
    reply.headers(error.headers)
    return await view(request, reply, current, noticeFor(error), error.httpStatus)
  }

  return { view, refusal }
}
