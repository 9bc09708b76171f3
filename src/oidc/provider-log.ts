import type { EventEmitter } from 'node:events'
import type { IncomingMessage } from 'node:http'
import type { FastifyBaseLogger } from 'fastify'

/**
 * What the provider says of its requests, in the service's log: its `server_error` (a failure of
 * ours: a store down, a bug) at error, a request it refused (a client's mistake, an expired code,
 * a wrong secret) at info, and a grant ended at the token endpoint — a code or refresh token
 * presented after its use, the sign of a stolen one — at warn. Each line is written with the request's own logger, so it
 * carries the request id its access line has. Only what names the trouble is written (the event,
 * the route, the client, the error code, the provider's fixed description and detail; for a
 * failure the error's name, message and stack): never a parameter of the request, so never a code,
 * a token, a secret or a verifier.
 */

/** The provider's endpoints' error events (oidc-provider docs/events.md), each emitted with (ctx, error). */
export const PROVIDER_ERROR_EVENTS = [
  'authorization.error',
  'grant.error',
  'userinfo.error',
  'revocation.error',
  'introspection.error',
  'end_session.error',
  'end_session_confirm.error',
  'end_session_success.error',
  'device_authorization.error',
  'code_verification.error',
  'device_resume.error',
  'backchannel.error',
  'jwks.error',
  'discovery.error',
  'pushed_authorization_request.error'
] as const

export interface ProviderLog {
  /** The logger of the request a raw request is (its request id), for what the provider says of it. */
  attach (raw: IncomingMessage, log: FastifyBaseLogger): void
  /** Sends a provider's failures and refusals to the log (each provider made: a key rotation makes a new one). */
  watch (provider: EventEmitter): void
}

/** The parts of a provider's context read here (its Koa context, `oidc` set on its routes). */
interface ContextLike {
  req?: IncomingMessage
  oidc?: { route?: string, client?: { clientId?: string }, params?: { grant_type?: unknown } }
}

/** The parts of a provider's error read here (OIDCProviderError's fields; any Error's name and message). */
interface ErrorLike {
  name?: unknown
  message?: unknown
  stack?: unknown
  error?: unknown
  error_description?: unknown
  error_detail?: unknown
  expose?: unknown
}

const text = (value: unknown): string | undefined => typeof value === 'string' ? value : undefined

function contextOf (value: unknown): ContextLike {
  return typeof value === 'object' && value !== null ? value as ContextLike : {}
}

function errorOf (value: unknown): ErrorLike {
  return typeof value === 'object' && value !== null ? value as ErrorLike : { message: String(value) }
}

export function createProviderLog (base: FastifyBaseLogger): ProviderLog {
  const logs = new WeakMap<IncomingMessage, FastifyBaseLogger>()
  const logOf = (ctx: ContextLike): FastifyBaseLogger => (ctx.req === undefined ? undefined : logs.get(ctx.req)) ?? base

  /** Where the request was and who made it: never its parameters. */
  const about = (event: string, ctx: ContextLike, error: ErrorLike): Record<string, unknown> => ({
    event,
    route: ctx.oidc?.route,
    client_id: ctx.oidc?.client?.clientId,
    error: text(error.error) ?? 'server_error'
  })

  const failed = (event: string, ctxValue: unknown, errorValue: unknown): void => {
    const ctx = contextOf(ctxValue)
    const error = errorOf(errorValue)
    // Its name, message and stack only, not the Error: the log's serializer copies every enumerable member of one.
    const err = Object.assign(new Error(text(error.message) ?? ''), { name: text(error.name) ?? 'Error' })
    err.stack = text(error.stack)
    logOf(ctx).error({ oidc: about(event, ctx, error), err }, 'the OpenID Connect provider failed a request')
  }

  const refused = (event: string, ctxValue: unknown, errorValue: unknown): void => {
    const ctx = contextOf(ctxValue)
    const error = errorOf(errorValue)
    logOf(ctx).info({ oidc: { ...about(event, ctx, error), description: text(error.error_description), detail: text(error.error_detail) } }, 'the OpenID Connect provider refused a request')
  }

  /** A grant ended at the token endpoint: a code or refresh token was presented after its use (its refusal follows at info). */
  const revoked = (ctxValue: unknown): void => {
    const ctx = contextOf(ctxValue)
    if (ctx.oidc?.route !== 'token') return
    const grantType = text(ctx.oidc.params?.grant_type)
    logOf(ctx).warn({ oidc: { event: 'grant.revoked', route: 'token', client_id: ctx.oidc.client?.clientId, grant_type: grantType } },
      'the OpenID Connect provider was shown a used code or refresh token: its grant is ended')
  }

  return {
    attach (raw, log) {
      logs.set(raw, log)
    },
    watch (provider) {
      provider.on('server_error', (ctx: unknown, error: unknown) => { failed('server_error', ctx, error) })
      for (const event of PROVIDER_ERROR_EVENTS) {
        provider.on(event, (ctx: unknown, error: unknown) => { refused(event, ctx, error) })
      }
      provider.on('grant.revoked', (ctx: unknown) => { revoked(ctx) })
      // Koa's own: what escaped the provider's handlers. A listener here also keeps Koa from printing it to stderr.
      provider.on('error', (error: unknown, ctx: unknown) => {
        if (errorOf(error).expose === true) refused('error', ctx, error)
        else failed('error', ctx, error)
      })
    }
  }
}
