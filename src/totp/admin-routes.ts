import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import type { AccountAdmin } from '../core/accounts.js'
import { AdminErrorSchema, UserAnswerSchema, UsernamePathSchema } from '../admin/schemas.js'
import { OK, userView } from '../admin/views.js'

/** The admin API's part of the second factor: removing an account's factor for a person who lost their authenticator. */
export const totpAdminRoutes: FastifyPluginAsyncTypebox<{ accounts: (request: FastifyRequest) => AccountAdmin }> = async (app, { accounts: accountsOf }) => {
  const errors = { '4xx': AdminErrorSchema, '5xx': AdminErrorSchema }

  app.delete('/users/:username/totp', {
    schema: { summary: 'Remove the account\'s second factor (TOTP and its recovery codes): a lost authenticator', params: UsernamePathSchema, response: { 200: UserAnswerSchema, ...errors } }
  }, async (request) => ({ ...OK, user: userView(await accountsOf(request).resetSecondFactor(request.params.username)) }))
}
