import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import type { AccountAdmin } from '../core/accounts.js'
import { AdminErrorSchema, Cursor, DEFAULT_PAGE, Limit, NextCursor, success, UserAnswerSchema, UsernamePathSchema } from '../admin/schemas.js'
import { decodeUserCursor, encodeUserCursor, OK, userView } from '../admin/views.js'

/**
 * The admin API's groups (api-contract, Groups and access rules): an account's local groups set
 * as a whole, and the groups read back with their members. A group exists while an account is in
 * it: no route makes or removes one alone.
 */

const GROUP_NAME_EXAMPLE = 'ops'

const GroupsBodySchema = Type.Object({
  groups: Type.Array(Type.String({ maxLength: 256 }), {
    maxItems: 1000,
    description: 'The account\'s whole set of local groups (unknown names make the group); [] takes it out of every local group. ' +
      'Names: 1 to 64 characters of a-z, 0-9, ".", "_" and "-", starting with a letter or a digit.',
    examples: [[GROUP_NAME_EXAMPLE, 'dev']]
  })
}, { additionalProperties: false })

const GroupPathSchema = Type.Object({ group: Type.String({ minLength: 1, maxLength: 256, examples: [GROUP_NAME_EXAMPLE] }) })
const MembersQuerySchema = Type.Object({ limit: Limit, cursor: Cursor }, { additionalProperties: false })

const GroupListAnswerSchema = success({
  groups: Type.Array(Type.Object({ name: Type.String(), members: Type.Integer({ description: 'Accounts in the group' }) }))
}, 'Every group with at least one member, by name')
const GroupAnswerSchema = success({
  group: Type.Object({
    name: Type.String(),
    members: Type.Array(Type.String(), { description: 'Usernames, in username order, a page at a time' })
  }),
  next_cursor: NextCursor
}, 'The group and a page of its members')

export const groupAdminRoutes: FastifyPluginAsyncTypebox<{ accounts: (request: FastifyRequest) => AccountAdmin }> = async (app, { accounts: accountsOf }) => {
  const errors = { '4xx': AdminErrorSchema, '5xx': AdminErrorSchema }

  app.put('/users/:username/groups', {
    schema: {
      summary: 'Set the account\'s local groups (the whole set): its live tokens carry the change at once',
      params: UsernamePathSchema,
      body: GroupsBodySchema,
      response: { 200: UserAnswerSchema, ...errors }
    }
  }, async (request) => ({ ...OK, user: userView(await accountsOf(request).setGroups(request.params.username, request.body.groups)) }))

  app.get('/groups', {
    schema: { summary: 'Every group with its number of members', response: { 200: GroupListAnswerSchema, ...errors } }
  }, async (request) => ({ ...OK, groups: await accountsOf(request).groups() }))

  app.get('/groups/:group', {
    schema: { summary: 'A group and its members (usernames, paged like users)', params: GroupPathSchema, querystring: MembersQuerySchema, response: { 200: GroupAnswerSchema, ...errors } }
  }, async (request) => {
    const { group } = request.params
    const { members, next } = await accountsOf(request).groupMembers(group, decodeUserCursor(request.query.cursor), request.query.limit ?? DEFAULT_PAGE)
    return { ...OK, group: { name: group, members }, next_cursor: next === undefined ? null : encodeUserCursor(next) }
  })
}
