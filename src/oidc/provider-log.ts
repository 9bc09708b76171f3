import type { EventEmitter } from 'node:events'
import type { IncomingMessage } from 'node:http'
import type { FastifyBaseLogger } from 'fastify'

/**
 * What the provider says of its requests, in the service's log: its `server_error` (a failure of
 * ours: a store down, a bug) at error, a request it refused (a client's mistake, an expired code,
 * a wrong secret) at info, and a code or refresh token presented twice (the sign of a stolen one:
 * the provider ends its grant) at warn. Each line is written with the request's own logger, so it
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
  oidc?: { route?: string, client?: { clientId?: string } }
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

/** A code or refresh token presented after its use (oidc-provider's grant source check). */
const REUSED = /already consumed$/

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
    // A plain object, not the Error: the log's error serializer would copy every enumerable member.
    const err = { type: text(error.name) ?? 'Error', message: text(error.message) ?? '', stack: text(error.stack) }
    logOf(ctx).error({ oidc: about(event, ctx, error), err }, 'the OpenID Connect provider failed a request')
  }

  const refused = (event: string, ctxValue: unknown, errorValue: unknown): void => {
    const ctx = contextOf(ctxValue)
    const error = errorOf(errorValue)
    const detail = text(error.error_detail)
    const oidc = { ...about(event, ctx, error), description: text(error.error_description), detail }
    if (detail !== undefined && REUSED.test(detail)) {
      logOf(ctx).warn({ oidc }, 'the OpenID Connect provider was shown a used code or refresh token: its grant is ended')
    } else {
      logOf(ctx).info({ oidc }, 'the OpenID Connect provider refused a request')
    }
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
      // Koa's own: what escaped the provider's handlers. A listener here also keeps Koa from printing it to stderr.
      provider.on('error', (error: unknown, ctx: unknown) => {
        if (errorOf(error).expose === true) refused('error', ctx, error)
        else failed('error', ctx, error)
      })
    }
  }
}
