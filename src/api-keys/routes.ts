import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { AuthService } from '../core/auth.js'
import { DEFAULT_PAGE, MAX_PAGE } from '../admin/schemas.js'
import { decodeKeyCursor, encodeKeyCursor, keyView } from './views.js'
import { reasons } from '../errors/reasons.js'
import { refuseOtherMethods } from '../http/methods.js'
import { noSuchKey, type ApiKeys } from './api-keys.js'
import { badRequest, StatusError } from '../errors/status.js'
import { CurrentPasswordSchema, errorResponses, forbiddenAnswer, TokenParamsSchema } from '../core/schemas.js'
import { clientOf } from '../core/routes/client-context.js'
import { routeToken } from '../core/routes/presented-token.js'

export interface KeyRoutesOptions {
  auth: AuthService
  apiKeys: ApiKeys
}

/** An unknown id and another account's alike (contract): the same status and body. */
const unknownKey = (): StatusError => new StatusError(403, 'Forbidden', 403, {}, { detail: reasons.unknownKey() })

const DATE = Type.String({ description: 'UTC, YYYY-MM-DDTHH:MM:SS' })
const KeyItemSchema = Type.Object({ id: Type.String(), name: Type.String(), created: DATE, expiration_date: DATE, last_used: Type.Union([DATE, Type.Null()]) })
const NewKeyBodySchema = Type.Object({
  token: Type.Optional(Type.String({ maxLength: 2048 })),
  name: Type.String({ minLength: 1, maxLength: 512 }),
  expires_in_days: Type.Optional(Type.Integer()),
  current_password: Type.Optional(CurrentPasswordSchema)
})
// Query values stay strings on the public listener (no type coercion there): the limit is a
// string of digits, its range checked by pageLimit.
const KeyListQuerySchema = Type.Object({
  ...TokenParamsSchema.properties,
  limit: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,3}$', description: `Keys per page (1-${MAX_PAGE}, default ${DEFAULT_PAGE})` })),
  cursor: Type.Optional(Type.String({ maxLength: 2048, description: 'The next_cursor of the previous page' }))
})

function pageLimit (limit: string | undefined): number {
  if (limit === undefined) return DEFAULT_PAGE
  const value = Number(limit)
  if (value > MAX_PAGE) throw badRequest(reasons.adminParameterNotValid('limit'))
  return value
}
const DeleteParamsSchema = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) })

const CALLER = 'The caller\'s Login token (token parameter, Authorization: Bearer or the AuthToken1 cookie); an API key is refused (403) here.'

/** The caller's own API keys: GET, POST /auth/keys and DELETE /auth/keys/{id}, with a Login token only. */
export const keyRoutes: FastifyPluginAsyncTypebox<KeyRoutesOptions> = async (app, { auth, apiKeys }) => {
  const tags = ['keys']

  app.get('/auth/keys', {
    schema: {
      tags,
      summary: 'The caller\'s live API keys, a page at a time (oldest first; limit, cursor -> next_cursor)',
      description: CALLER,
      querystring: KeyListQuerySchema,
      response: {
        200: Type.Object({
          status: Type.Literal(0),
          message: Type.Literal('Success'),
          keys: Type.Array(KeyItemSchema),
          next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'Where the next page starts; null on the last page' })
        }),
        ...errorResponses(reasons.adminParameterNotValid('cursor'), 403, 404, 405, 503)
      }
    }
  }, async (request) => {
    const holder = await auth.authenticate(routeToken(request))
    const { keys, next } = await apiKeys.page(holder.accountId, decodeKeyCursor(request.query.cursor), pageLimit(request.query.limit))
    return { status: 0 as const, message: 'Success' as const, keys: keys.map(keyView), next_cursor: next === undefined ? null : encodeKeyCursor(next) }
  })

  app.post('/auth/keys', {
    schema: {
      tags,
      summary: 'A new API key of the caller, with the current password: its secret is in this answer only',
      description: `${CALLER} A key outlives the token (Logout, a password change), so the body carries current_password too: ` +
        'missing, 400; wrong, 401 with status 701, counted as a failed Login.',
      body: NewKeyBodySchema,
      response: {
        200: Type.Object({ status: Type.Literal(0), message: Type.Literal('Success'), key: KeyItemSchema, secret: Type.String() }),
        ...errorResponses(reasons.required('current_password'), 401, 403, 404, 405, 413, 415, 429, 503)
      }
    }
  }, async (request) => {
    const currentPassword = request.body.current_password
    if (currentPassword === undefined) throw badRequest(reasons.required('current_password'))
    const client = clientOf(request)
    const account = await auth.stepUp({ token: routeToken(request), currentPassword, client })
    const { key, secret } = await apiKeys.create(account, request.body.name, request.body.expires_in_days, { clientIp: client.ip, userAgent: client.userAgent })
    return { status: 0 as const, message: 'Success' as const, key: keyView(key), secret }
  })

  app.delete('/auth/keys/:id', {
    schema: {
      tags,
      summary: 'End one of the caller\'s API keys at once',
      description: `${CALLER} An unknown id and another account's get the same 403.`,
      params: DeleteParamsSchema,
      querystring: TokenParamsSchema,
      body: TokenParamsSchema,
      response: {
        200: Type.Object({ status: Type.Literal(0), message: Type.Literal('Success'), key: KeyItemSchema }),
        ...errorResponses(reasons.authorizationNotBearer(), 403, 404, 405, 413, 415, 503),
        403: forbiddenAnswer('no such key of this account (an unknown id and another account\'s alike)', reasons.unknownKey())
      }
    }
  }, async (request) => {
    const holder = await auth.authenticate(routeToken(request))
    const client = clientOf(request)
    try {
      const key = await apiKeys.revoke(request.params.id, { clientIp: client.ip, userAgent: client.userAgent }, holder.accountId)
      return { status: 0 as const, message: 'Success' as const, key: keyView(key) }
    } catch (error) {
      if (error instanceof StatusError && error.status === noSuchKey().status && error.httpStatus === 404) throw unknownKey()
      throw error
    }
  })

  refuseOtherMethods(app, '/auth/keys', ['GET', 'POST'])
  refuseOtherMethods(app, '/auth/keys/:id', ['DELETE'])
}
