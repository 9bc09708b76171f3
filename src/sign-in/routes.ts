import fastifyCookie from '@fastify/cookie'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import type { AuthService } from '../core/auth.js'
import type { Config } from '../config/config.js'
import { StatusError } from '../errors/status.js'
import type { Sessions } from '../sessions/index.js'
import { signInPage } from './pages.js'
import type { PasskeyStore } from './passkey-store.js'
import type { PendingStore } from './pending-store.js'
import type { RequestLimiter } from '../core/stores/request-limiter.js'
import type { UserStore } from '../core/stores/user-store.js'
import type { ApiKeys } from '../api-keys/index.js'
import type { SecondFactor } from '../totp/index.js'
import { registerAccountRoutes, type AccountPages } from './account-routes.js'
import { TOKEN_COOKIE } from '@auth-token-service/protocol/token'
import { assetRoutes } from './asset-routes.js'
import { createCodeStep, type SecondFactorCheck } from './code-step.js'
import { createSignInContext, field, noticeFor } from './page-context.js'
import { registerPasskeyCeremonies, registerPasskeyRemoval } from './passkey-routes.js'
import { promptField, registerSignInPage } from './sign-in-page.js'
import { registerSignOut } from './sign-out.js'

export interface SignInRoutesOptions {
  auth: AuthService
  config: Config
  sessions: Sessions
  passkeys: PasskeyStore
  pending: PendingStore
  /** The per-client limit of the routes anyone may call before signing in (passkey options and answer, the code step). */
  preSignIn: RequestLimiter
  secondFactor?: SecondFactorCheck | undefined
  /** What the account page acts through: the services the JSON routes use. */
  account: {
    apiKeys: ApiKeys
    secondFactor: SecondFactor
    users: Pick<UserStore, 'findByUsername'>
  }
}

/**
 * The browser sign-in: GET/POST /auth/signin (the code step at /auth/signin/code), GET/POST
 * /auth/signout, the passkey ceremonies, and the pages' own style and scripts. Every step is
 * the domain's Login (AuthService), so the limits, events, lifetime and audit are Login's.
 */
export const signInRoutes: FastifyPluginAsync<SignInRoutesOptions> = async (app, options) => {
  const { auth, config, sessions, passkeys, pending, preSignIn, secondFactor } = options
  await app.register(fastifyCookie)
  const context = createSignInContext(config, auth)
  const { page, brandOf, redirectOf } = context

  // The pages' files: the CSP's 'self' scripts and style.
  await app.register(assetRoutes)

  // The HTML steps: a refusal of any of them (a cross-site post, a limit, a backend) is a page with a message.
  await app.register(async (pages: FastifyInstance) => {
    let account: AccountPages | undefined
    pages.setErrorHandler(async (error, request, reply) => {
      if (!(error instanceof StatusError) || error.status === 500) throw error
      if (request.url.startsWith('/auth/account/') && account !== undefined) {
        const shown = await account.refusal(request, reply, error)
        if (shown !== undefined) return shown
      }
      reply.headers(error.headers)
      return page(reply, error.httpStatus, signInPage({ brand: brandOf(request), rd: redirectOf(request, field(request.body, 'rd')), prompt: promptField(request.body), message: noticeFor(error) }))
    })

    account = registerAccountRoutes(pages, {
      auth,
      config,
      sessions,
      passkeys,
      ...options.account,
      signedIn: context.signedIn,
      page,
      brandOf,
      clearToken: (reply) => { reply.clearCookie(TOKEN_COOKIE, context.cookie) }
    })
    const codeStep = createCodeStep(context, { auth, pending, preSignIn, secondFactor })
    registerSignInPage(pages, context, { auth, codeStep, account })
    codeStep.register(pages)
    registerSignOut(pages, context, auth)
    registerPasskeyRemoval(pages, context, passkeys)
  })

  // The passkey ceremonies, called by the page's script: JSON in and out, the service's usual errors.
  await app.register(async (api: FastifyInstance) => {
    registerPasskeyCeremonies(api, context, { auth, config, passkeys, pending, preSignIn })
  })
}
