import fastifyCookie from '@fastify/cookie'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { AuthService } from '../core/auth.js'
import type { CookieSettings } from '../config/parts/http.js'
import { reasons } from '../errors/reasons.js'
import { tokenCookieOptions } from '../http/cookie.js'
import { refuseOtherMethods } from '../http/methods.js'
import { StatusError, SUCCESS } from '../errors/status.js'
import { cookieToken } from '@auth-token-service/protocol/token-source'
import { errorResponses, forbiddenAnswer, SessionIdPathSchema, SessionListSchema, SessionsEndedSchema, SuccessSchema, TokenParamsSchema } from '../core/schemas.js'
import type { Sessions } from './sessions.js'
import { sessionItem } from './view.js'
import { TOKEN_COOKIE, hashToken } from '@auth-token-service/protocol/token'
import { clientOf } from '../core/routes/client-context.js'
import { routeToken } from '../core/routes/presented-token.js'

export interface SessionRoutesOptions {
  auth: AuthService
  sessions: Sessions
  /** The cookie's attributes, to clear it as it was set. */
  config: CookieSettings
}

/** An unknown id and another account's alike (contract): the same status, body and work. */
export const unknownSession = (): StatusError => new StatusError(403, 'Forbidden', 403, {}, { detail: reasons.unknownSession() })

const pathOf = (url: string): string => {
  const query = url.indexOf('?')
  return query < 0 ? url : url.slice(0, query)
}

const TOKEN_SOURCES = 'The caller\'s token from the token parameter, Authorization: Bearer or the AuthToken1 cookie, as Authenticate takes it.'

/**
 * The caller's own sessions: GET /auth/sessions lists them, DELETE /auth/sessions/{id}
 * ends one, DELETE /auth/sessions ends all but the caller's. Ending one is a Logout of its token.
 */
export const sessionRoutes: FastifyPluginAsyncTypebox<SessionRoutesOptions> = async (app, { auth, sessions, config }) => {
  // Ending the caller's own session by id clears the cookie that held it, as Logout does.
  await app.register(fastifyCookie)
  const cookie = tokenCookieOptions(config)
  const tags = ['sessions']

  app.get('/auth/sessions', {
    schema: {
      tags,
      summary: 'The caller\'s active sessions',
      description: `${TOKEN_SOURCES} Newest first; \`current\` marks the caller's.`,
      querystring: TokenParamsSchema,
      response: { 200: SessionListSchema, ...errorResponses(reasons.authorizationNotBearer(), 403, 404, 405, 503) }
    }
  }, async (request) => {
    const token = routeToken(request)
    const holder = await auth.authenticate(token)
    const list = await sessions.list(holder.accountId, hashToken(token as string))
    return { status: 0 as const, message: 'Success' as const, sessions: list.map(sessionItem) }
  })

  app.delete('/auth/sessions', {
    schema: {
      tags,
      summary: 'End every session of the caller but the current one',
      description: `${TOKEN_SOURCES} Each ends as a Logout ends its token: at once, for every instance and guard.`,
      querystring: TokenParamsSchema,
      body: TokenParamsSchema,
      response: { 200: SessionsEndedSchema, ...errorResponses(reasons.authorizationNotBearer(), 403, 404, 405, 413, 415, 503) }
    }
  }, async (request) => {
    const token = routeToken(request)
    const holder = await auth.authenticate(token)
    // `/auth/sessions/` is what `DELETE /auth/sessions/${id}` sends with an empty id: the router
    // takes it for this route (a trailing slash is accepted everywhere), but nobody meant to end
    // every other session by it. Answered as the unknown id it is.
    if (pathOf(request.url).endsWith('/')) throw unknownSession()
    const ended = await sessions.endAll(holder.accountId, clientOf(request), hashToken(token as string))
    return { status: 0 as const, message: 'Success' as const, ended }
  })

  app.delete('/auth/sessions/:id', {
    schema: {
      tags,
      summary: 'End one of the caller\'s sessions',
      description: `${TOKEN_SOURCES} Ends it as a Logout ends its token (the current one too: then the cookie is cleared). ` +
        'An unknown id and another account\'s get the same 403.',
      params: SessionIdPathSchema,
      querystring: TokenParamsSchema,
      body: TokenParamsSchema,
      response: {
        200: SuccessSchema,
        ...errorResponses(reasons.authorizationNotBearer(), 403, 404, 405, 413, 415, 503),
        403: forbiddenAnswer('no such session of this account (an unknown id and another account\'s alike)', reasons.unknownSession())
      }
    }
  }, async (request, reply) => {
    const token = routeToken(request)
    const holder = await auth.authenticate(token)
    const client = clientOf(request)
    if (!await sessions.end(holder.accountId, request.params.id, client)) throw unknownSession()
    // The caller ended its own session: the cookie that held its token goes, as at Logout.
    if (token !== undefined && cookieToken(request.headers.cookie) === token &&
        await auth.authenticate(token).then(() => false, () => true)) reply.clearCookie(TOKEN_COOKIE, cookie)
    return SUCCESS
  })

  refuseOtherMethods(app, '/auth/sessions', ['GET', 'DELETE'])
  refuseOtherMethods(app, '/auth/sessions/:id', ['DELETE'])
}
