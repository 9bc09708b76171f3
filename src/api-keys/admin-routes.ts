import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import type { AccountAdmin } from '../core/accounts.js'
import type { ApiKeys, KeyActor } from './api-keys.js'
import {
  AdminErrorSchema, CreatedKeyAnswerSchema, DEFAULT_PAGE, KeyAnswerSchema, KeyListAnswerSchema, KeyListQuerySchema, KeyPathSchema, NewKeySchema, UsernamePathSchema
} from '../admin/schemas.js'
import { OK } from '../admin/views.js'
import { decodeKeyCursor, encodeKeyCursor, keyView } from './views.js'

export interface KeyRoutesOptions {
  accounts: (request: FastifyRequest) => AccountAdmin
  apiKeys: ApiKeys
  actorOf: (request: FastifyRequest) => KeyActor
}

/** /admin/users/{username}/keys and /admin/keys/{id} (api-contract.md, "Machine credentials"). */
export const keyRoutes: FastifyPluginAsyncTypebox<KeyRoutesOptions> = async (app, { accounts, apiKeys, actorOf }) => {
  const errors = { '4xx': AdminErrorSchema, '5xx': AdminErrorSchema }

  app.post('/users/:username/keys', {
    schema: { summary: 'Create an API key for the account: its secret is in this answer only', params: UsernamePathSchema, body: NewKeySchema, response: { 200: CreatedKeyAnswerSchema, ...errors } }
  }, async (request) => {
    const account = await accounts(request).show(request.params.username)
    const { key, secret } = await apiKeys.create(account, request.body.name, request.body.expires_in_days, actorOf(request))
    return { ...OK, key: keyView(key), secret }
  })

  app.get('/users/:username/keys', {
    schema: {
      summary: 'The account\'s live API keys (never a secret), a page at a time (oldest first)',
      params: UsernamePathSchema,
      querystring: KeyListQuerySchema,
      response: { 200: KeyListAnswerSchema, ...errors }
    }
  }, async (request) => {
    const after = decodeKeyCursor(request.query.cursor)
    const account = await accounts(request).show(request.params.username)
    const { keys, next } = await apiKeys.page(account.id, after, request.query.limit ?? DEFAULT_PAGE)
    return { ...OK, keys: keys.map(keyView), next_cursor: next === undefined ? null : encodeKeyCursor(next) }
  })

  app.delete('/keys/:id', {
    schema: { summary: 'End an API key at once, everywhere (guards included)', params: KeyPathSchema, response: { 200: KeyAnswerSchema, ...errors } }
  }, async (request) => ({ ...OK, key: keyView(await apiKeys.revoke(request.params.id, actorOf(request))) }))
}
