import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import type { AccountAdmin } from '../core/accounts.js'
import {
  AdminErrorSchema, DeletedAnswerSchema, DEFAULT_PAGE, EndedAnswerSchema, NewUserSchema, UserAnswerSchema, UserChangeSchema,
  UserListAnswerSchema, UserListQuerySchema, UsernamePathSchema
} from './schemas.js'
import { decodeUserCursor, encodeUserCursor, OK, userView } from './views.js'
import { checkedEmail } from '../core/email-addresses.js'

/** /admin/users: the accounts, over the same AccountAdmin the command line uses (accounts.ts). */
export const userRoutes: FastifyPluginAsyncTypebox<{ accounts: (request: FastifyRequest) => AccountAdmin }> = async (app, { accounts: accountsOf }) => {
  const errors = { '4xx': AdminErrorSchema, '5xx': AdminErrorSchema }

  app.get('/users', {
    schema: { summary: 'List accounts, a page at a time (username order)', querystring: UserListQuerySchema, response: { 200: UserListAnswerSchema, ...errors } }
  }, async (request) => {
    const { accounts: page, next } = await accountsOf(request).page(decodeUserCursor(request.query.cursor), request.query.limit ?? DEFAULT_PAGE)
    return { ...OK, users: page.map(userView), next_cursor: next === undefined ? null : encodeUserCursor(next) }
  })

  app.post('/users', {
    // 200 as every Success of the contract (status 0 is HTTP 200), not 201.
    schema: { summary: 'Create an account (the password policy applies), or invite one by email (`invite`)', body: NewUserSchema, response: { 200: UserAnswerSchema, ...errors } }
  }, async (request) => {
    return { ...OK, user: userView(await accountsOf(request).create(request.body)) }
  })

  app.get('/users/:username', {
    schema: { summary: 'One account', params: UsernamePathSchema, response: { 200: UserAnswerSchema, ...errors } }
  }, async (request) => ({ ...OK, user: userView(await accountsOf(request).show(request.params.username)) }))

  app.patch('/users/:username', {
    schema: {
      summary: 'Disable or enable an account, set its password or its email; disabling and a new password end its sessions',
      params: UsernamePathSchema,
      body: UserChangeSchema,
      response: { 200: EndedAnswerSchema, ...errors }
    }
  }, async (request) => {
    const { disabled, password, email } = request.body
    let { username } = request.params
    let ended = 0
    // A bad address is refused before anything changes.
    if (typeof email === 'string') checkedEmail(email)
    // The password first: a refused one (the policy) leaves the account as it was.
    if (password !== undefined) {
      const changed = await accountsOf(request).setPassword(username, password)
      username = changed.account.username
      ended += changed.ended
    }
    if (disabled !== undefined) {
      const changed = await accountsOf(request).setDisabled(username, disabled)
      username = changed.account.username
      ended += changed.ended
    }
    if (email !== undefined) username = (await accountsOf(request).setEmail(username, email)).username
    return { ...OK, user: userView(await accountsOf(request).show(username)), sessions_ended: ended }
  })

  app.delete('/users/:username', {
    schema: { summary: 'Delete an account and end its sessions (its audit events stay)', params: UsernamePathSchema, response: { 200: DeletedAnswerSchema, ...errors } }
  }, async (request) => {
    const { ended } = await accountsOf(request).remove(request.params.username)
    return { ...OK, sessions_ended: ended }
  })

  app.post('/users/:username/unlock', {
    schema: { summary: 'Lift the lock that failed logins put on the account', params: UsernamePathSchema, response: { 200: UserAnswerSchema, ...errors } }
  }, async (request) => ({ ...OK, user: userView(await accountsOf(request).unlock(request.params.username)) }))
}
