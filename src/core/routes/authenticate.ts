import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AuthService } from '../auth.js'
import type { TokenRecord } from '@auth-token-service/protocol/layout'
import { reasons } from '../../errors/reasons.js'
import { badRequest, StatusError, SUCCESS, type StatusBody } from '../../errors/status.js'
import { formatExpirationDate } from '../time.js'
import { AuthenticateParamsSchema, AuthenticateSuccessSchema, errorResponses, NO_GROUPS, PADDING_PARAMETER_NAMES, TokenPathSchema, type AuthenticateParams } from '../schemas.js'
import { EMPTY_BODY } from '../../http/parsing.js'
import { refuseOtherMethods } from '../../http/methods.js'
import { paddingNameRefusal } from '../../http/padding-names.js'
import { routeToken } from './presented-token.js'

/** Authenticate takes API keys too (never from the cookie); one options object, not one per request. */
const WITH_KEYS = { keys: true } as const

export interface AuthenticateRoutesOptions {
  auth: AuthService
}

/** The one padding-function name asked for, or undefined; two different names, a reserved word or a page's global: 400. */
function paddingFunction (params: AuthenticateParams): string | undefined {
  let name: string | undefined
  for (const key of PADDING_PARAMETER_NAMES) {
    const value = params[key]
    if (value === undefined) continue
    const refusal = paddingNameRefusal(value)
    if (refusal === 'reserved-word') throw badRequest(reasons.paddingReserved(key))
    if (refusal === 'page-global') throw badRequest(reasons.paddingGlobal(key))
    if (name !== undefined && name !== value) throw badRequest(reasons.paddingNamesDiffer())
    name = value
  }
  return name
}

function isEmpty (params: AuthenticateParams): boolean {
  // eslint-disable-next-line no-unreachable-loop -- one step tells whether there is any key
  for (const _key in params) return false
  return true
}

/** `function <name>() {return <status-message object>;}` (spec §4.2), always HTTP 200 so a script tag runs it. */
function sendPadded (reply: FastifyReply, name: string, body: StatusBody) {
  return reply
    .code(200)
    .type('application/javascript; charset=utf-8')
    .header('x-content-type-options', 'nosniff')
    .send(`function ${name}() {return ${JSON.stringify({ status: body.status, message: body.message })};}`)
}

/** GET or POST /auth/Authenticate[/{token}]: is the token active? The hot path: one store read, no writes. */
export const authenticateRoutes: FastifyPluginAsyncTypebox<AuthenticateRoutesOptions> = async (app, { auth }) => {
  const response = { 200: AuthenticateSuccessSchema, ...errorResponses(reasons.formatNotJson(), 403, 404, 405, 503) }
  const responseWithBody = { 200: AuthenticateSuccessSchema, ...errorResponses(reasons.formatNotJson(), 403, 404, 405, 413, 415, 503) }
  const docs = {
    tags: ['tokens'],
    summary: 'Authenticate: is the token active?',
    description: 'The token from the path, the token parameter (query or, on POST, body), Authorization: Bearer or the AuthToken1 cookie, in that order ' +
      '(two different AuthToken1 values: no cookie token; a malformed Authorization header: 400). ' +
      'With a padding-function parameter (jsonpFunction, jsopFunction, jsonpFormat or callback) the answer is ' +
      '`function <name>() {return <status object>;}` as application/javascript, always HTTP 200. Never extends a token.'
  }

  // One object per answer, not a common part spread into a second one: the hot path's answer.
  const success = (record: TokenRecord) => record.keyId === undefined
    ? record.oidc === undefined
      ? {
          status: 0 as const,
          message: 'Success' as const,
          expiration_date: formatExpirationDate(record.expiresAt),
          account_id: record.accountId,
          username: record.username,
          federated: record.federated,
          kind: 'token' as const,
          groups: record.groups ?? NO_GROUPS
        }
      : {
          status: 0 as const,
          message: 'Success' as const,
          expiration_date: formatExpirationDate(record.expiresAt),
          account_id: record.accountId,
          username: record.username,
          federated: record.federated,
          kind: 'oidc' as const,
          client_id: record.oidc.clientId,
          groups: record.groups ?? NO_GROUPS
        }
    : {
        status: 0 as const,
        message: 'Success' as const,
        expiration_date: formatExpirationDate(record.expiresAt),
        account_id: record.accountId,
        username: record.username,
        federated: record.federated,
        kind: 'api_key' as const,
        key_id: record.keyId,
        groups: record.groups ?? NO_GROUPS
      }

  // Not async: the hot path returns the store's promise chained once, no frame awaiting it.
  function answer (request: FastifyRequest, reply: FastifyReply, params: AuthenticateParams) {
    const padding = paddingFunction(params)
    // Path segment, then `token` parameter, then Bearer, then the cookie (contract).
    const token = routeToken(request, WITH_KEYS)
    if (padding === undefined) return auth.authenticateCredential(token, request).then(success)
    // Sent here, so the promise settles with nothing for Fastify to send.
    return auth.authenticateCredential(token, request).then(
      () => { sendPadded(reply, padding, SUCCESS) },
      (error: unknown) => {
        if (!(error instanceof StatusError)) throw error
        sendPadded(reply, padding, error.toBody())
      })
  }

  // Key-value parameters come from the query or, for POST, a form or JSON body; a body value wins.
  // (Usually one side is empty: no copy then. The query is looked at first: it is usually the
  // empty one, and finding no key in an empty object is cheaper than finding one in a full one.)
  function merged (query: AuthenticateParams, body: AuthenticateParams): AuthenticateParams {
    if (body === EMPTY_BODY) return query
    if (isEmpty(query)) return body
    return isEmpty(body) ? query : { ...query, ...body }
  }

  app.get('/auth/Authenticate', { schema: { ...docs, querystring: AuthenticateParamsSchema, response } },
    (request, reply) => answer(request, reply, request.query))
  app.get('/auth/Authenticate/:token', { schema: { ...docs, params: TokenPathSchema, querystring: AuthenticateParamsSchema, response } },
    (request, reply) => answer(request, reply, request.query))
  app.post('/auth/Authenticate', { schema: { ...docs, querystring: AuthenticateParamsSchema, body: AuthenticateParamsSchema, response: responseWithBody } },
    (request, reply) => answer(request, reply, merged(request.query, request.body)))
  app.post('/auth/Authenticate/:token', { schema: { ...docs, params: TokenPathSchema, querystring: AuthenticateParamsSchema, body: AuthenticateParamsSchema, response: responseWithBody } },
    (request, reply) => answer(request, reply, merged(request.query, request.body)))
  refuseOtherMethods(app, '/auth/Authenticate', ['GET', 'POST'])
  refuseOtherMethods(app, '/auth/Authenticate/:token', ['GET', 'POST'])
}
