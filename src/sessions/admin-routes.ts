import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import type { AccountAdmin } from '../core/accounts.js'
import { reasons } from '../errors/reasons.js'
import { StatusError } from '../errors/status.js'
import type { Sessions } from './sessions.js'
import { AdminErrorSchema, EndedOneAnswerSchema, SessionListAnswerSchema, SessionPathSchema, SessionsEndedAnswerSchema, UsernamePathSchema } from '../admin/schemas.js'
import { OK } from '../admin/views.js'
import { sessionView } from './view.js'

export interface SessionRoutesOptions {
  /** The account administration acting for the request's caller. */
  accounts: (request: FastifyRequest) => AccountAdmin
  /** The credential the request was authenticated with, for the audit event of a session it ends. */
  credentialOf: (request: FastifyRequest) => string | undefined
  sessions: Sessions
  /** The account a session id belongs to, or null for an unknown id (session-owner.ts). */
  accountOf: (sessionId: string) => Promise<string | null>
  /** Who ends a session, for its audit event. */
  actor: string
}

const unknownSession = (): StatusError => new StatusError(404, 'Not Found', 404, {}, { detail: reasons.noSuchSession() })

/** An account's sessions: list them, end all; and end one session by its id. */
export const sessionRoutes: FastifyPluginAsyncTypebox<SessionRoutesOptions> = async (app, { accounts: accountsOf, sessions, accountOf, actor, credentialOf }) => {
  const errors = { '4xx': AdminErrorSchema, '5xx': AdminErrorSchema }
  const clientOf = (request: FastifyRequest) => ({ ip: request.ip, userAgent: request.headers['user-agent'], credential: credentialOf(request) })

  app.get('/users/:username/sessions', {
    schema: { summary: 'The account\'s active sessions, newest first', params: UsernamePathSchema, response: { 200: SessionListAnswerSchema, ...errors } }
  }, async (request) => {
    const account = await accountsOf(request).show(request.params.username)
    return { ...OK, sessions: (await sessions.list(account.id)).map(sessionView) }
  })

  app.delete('/users/:username/sessions', {
    schema: { summary: 'End every session of the account (a revoke-all: a Login in flight gets no token either)', params: UsernamePathSchema, response: { 200: SessionsEndedAnswerSchema, ...errors } }
  }, async (request) => {
    const { ended } = await accountsOf(request).revokeSessions(request.params.username)
    return { ...OK, sessions_ended: ended }
  })

  app.delete('/sessions/:id', {
    schema: { summary: 'End one session by its id, as a Logout of its token would', params: SessionPathSchema, response: { 200: EndedOneAnswerSchema, ...errors } }
  }, async (request) => {
    const { id } = request.params
    const accountId = await accountOf(id)
    if (accountId === null || !await sessions.end(accountId, id, clientOf(request), actor)) throw unknownSession()
    return OK
  })
}
