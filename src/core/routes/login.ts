import fastifyCookie from '@fastify/cookie'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AuthService } from '../auth.js'
import type { CookieSettings } from '../../config/parts/http.js'
import type { TokenSettings } from '../../config/parts/tokens.js'
import { reasons } from '../../errors/reasons.js'
import { badRequest } from '../../errors/status.js'
import { formatExpirationDate } from '../time.js'
import { errorResponses, LegacyLoginPathSchema, LoginParamsSchema, LoginSuccessSchema } from '../schemas.js'
import { tokenCookieOptions } from '../../http/cookie.js'
import { refuseOtherMethods } from '../../http/methods.js'
import { TOKEN_COOKIE } from '@auth-token-service/protocol/token'
import { clientOf } from './client-context.js'
import { routeToken } from './presented-token.js'

export interface LoginRoutesOptions {
  auth: AuthService
  config: CookieSettings & Pick<TokenSettings, 'legacyPathLogin'>
}

/** POST /auth/Login: username and password from the query, a form or JSON body, or (legacy) the path. */
export const loginRoutes: FastifyPluginAsyncTypebox<LoginRoutesOptions> = async (app, { auth, config }) => {
  // The cookie plugin's hooks run only in this scope: the routes that set or clear the cookie.
  await app.register(fastifyCookie)
  const cookie = tokenCookieOptions(config)
  const response = { 200: LoginSuccessSchema, ...errorResponses(reasons.required('password'), 401, 404, 405, 413, 415, 429, 503) }

  async function login (request: FastifyRequest, reply: FastifyReply, username: string | undefined, password: string | undefined, presentedToken: string | undefined, otp: string | undefined) {
    if (username === undefined) throw badRequest(reasons.required('username'))
    if (password === undefined) throw badRequest(reasons.required('password'))
    const issued = await auth.login({ username, password, presentedToken, otp, client: clientOf(request) })
    reply.setCookie(TOKEN_COOKIE, issued.token, {
      ...cookie,
      expires: new Date(issued.expiresAt),
      maxAge: Math.max(0, Math.floor((issued.expiresAt - Date.now()) / 1000))
    })
    return {
      status: 0 as const,
      message: 'Success' as const,
      token: issued.token,
      AuthToken: issued.token,
      expiration_date: formatExpirationDate(issued.expiresAt)
    }
  }

  app.post('/auth/Login', {
    schema: {
      tags: ['tokens'],
      summary: 'Login: a username and password for a token',
      description: 'username and password in a form body or a JSON body. The query string works too, as the legacy way ' +
        '(a body value wins over it), but puts the password in a URL, where proxies and access logs keep it: send a body. ' +
        'Presenting an active token of the same account (token parameter, Authorization: Bearer or AuthToken1 cookie) refreshes it. ' +
        'Sets the AuthToken1 cookie (in this page too: Authenticate and Logout then work without a token). ' +
        'Bad credentials: HTTP 401 with status 701; too many failures: 429 with Retry-After. ' +
        'An account with a second factor also takes otp (a TOTP code or a recovery code); without it the right password gets 401 with status 702.',
      querystring: LoginParamsSchema,
      body: LoginParamsSchema,
      response
    }
  }, async (request, reply) => {
    // A body value wins over a query value (contract).
    const body = request.body
    const query = request.query
    return await login(request, reply,
      body.username ?? query.username,
      body.password ?? query.password,
      routeToken(request),
      body.otp ?? query.otp)
  })
  refuseOtherMethods(app, '/auth/Login', ['POST'])

  if (config.legacyPathLogin) {
    // Path style, kept for backward compatibility (spec §9); each segment percent-decoded by the router.
    app.post('/auth/Login/:username/:password', {
      schema: {
        tags: ['tokens'],
        summary: 'Login, path style (backward compatibility)',
        description: 'Each segment percent-encoded. Off when AUTH_LEGACY_PATH_LOGIN=false.',
        params: LegacyLoginPathSchema,
        querystring: LoginParamsSchema,
        response
      }
    }, async (request, reply) => await login(request, reply,
      request.params.username,
      request.params.password,
      routeToken(request),
      // No second factor in a path: an account that has one gets 702 here (contract).
      undefined))
    refuseOtherMethods(app, '/auth/Login/:username/:password', ['POST'])
    // A legacy client that left out the password: a bad request, not an unknown route.
    app.post('/auth/Login/:username', { schema: { hide: true } }, async () => { throw badRequest(reasons.required('password')) })
    refuseOtherMethods(app, '/auth/Login/:username', ['POST'])
  }
}
