import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server'
import type { AuthService } from '../core/auth.js'
import type { Config } from '../config/config.js'
import { badRequest } from '../errors/status.js'
import { reasons } from '../errors/reasons.js'
import { limitPerClient } from '../core/routes/client-limit.js'
import { ownOrigin } from '../http/cross-site.js'
import { refuseOtherMethods } from '../http/methods.js'
import type { RequestLimiter } from '../core/stores/request-limiter.js'
import { clientOf } from '../core/routes/client-context.js'
import { clientName } from './display.js'
import { createPasskeyCeremonies, type RelyingParty } from './passkeys.js'
import type { PasskeyStore } from './passkey-store.js'
import type { PendingStore } from './pending-store.js'
import { field, type SignInContext } from './page-context.js'

/**
 * Passkeys: the ceremonies the page's script calls (sign in with one, register one: JSON in and
 * out, the service's usual errors), and the account page's form that removes one.
 */

export interface PasskeyRoutesDeps {
  auth: AuthService
  config: Pick<Config, 'webauthnRpId' | 'webauthnOrigins'>
  passkeys: PasskeyStore
  pending: PendingStore
  /** The per-client limit of the routes anyone may call before signing in. */
  preSignIn: RequestLimiter
}

/** The outer shape of a WebAuthn answer (the library checks the rest). */
function isCredentialAnswer (value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false
  const answer = value as Record<string, unknown>
  return typeof answer.id === 'string' && typeof answer.rawId === 'string' && answer.type === 'public-key' &&
    typeof answer.response === 'object' && answer.response !== null
}

/** POST /auth/passkeys/:id/delete: the account page's form, a page's answer (303 back to it). */
export function registerPasskeyRemoval (pages: FastifyInstance, { signedIn }: SignInContext, passkeys: Pick<PasskeyStore, 'remove'>): void {
  pages.post('/auth/passkeys/:id/delete', { schema: { hide: true } }, async (request, reply) => {
    const current = await signedIn(request)
    if (current === undefined) return await reply.code(303).header('location', '/auth/signin').send()
    const { id } = request.params as { id: string }
    await passkeys.remove(current.record.accountId, id)
    return await reply.code(303).header('location', '/auth/signin?done=passkey-removed#passkeys-section').send()
  })
  refuseOtherMethods(pages, '/auth/passkeys/:id/delete', ['POST'])
}

/** The ceremonies, called by the page's script: JSON in and out, the service's usual errors. */
export function registerPasskeyCeremonies (api: FastifyInstance, context: SignInContext, { auth, config, passkeys, pending, preSignIn }: PasskeyRoutesDeps): void {
  const { redirectOf, browserToken, signedIn, setToken } = context
  const ceremonies = createPasskeyCeremonies({ auth, passkeys, pending })
  const failed = { status: 701, message: 'Login Failed' }

  function relyingParty (request: FastifyRequest): RelyingParty {
    const own = ownOrigin(request)
    return {
      id: config.webauthnRpId ?? request.hostname.replace(/:\d+$/, '').replace(/^\[|\]$/g, ''),
      origins: config.webauthnOrigins.length > 0 ? config.webauthnOrigins : own === undefined ? [] : [own]
    }
  }

  // onRequest: a refused request is answered before its body is read.
  api.post('/auth/signin/passkey/options', { schema: { hide: true }, onRequest: limitPerClient(preSignIn, 'passkey-options') }, async (request) =>
    ({ status: 0, message: 'Success', options: await ceremonies.authenticationOptions(relyingParty(request)) }))

  api.post('/auth/signin/passkey', { schema: { hide: true }, onRequest: limitPerClient(preSignIn, 'passkey') }, async (request, reply) => {
    const response = (request.body as { response?: unknown } | undefined)?.response
    if (!isCredentialAnswer(response)) return await reply.code(401).send(failed)
    const issued = await ceremonies.signIn(response as AuthenticationResponseJSON, relyingParty(request), clientOf(request), browserToken(request))
    setToken(reply, issued)
    return { status: 0, message: 'Success', redirect: redirectOf(request, field(request.body, 'rd')) ?? '/auth/signin' }
  })

  // A passkey outlives the browser's token: the password again first (AuthService.stepUp), and
  // the challenge is bound to the account it proved, so the token alone never registers one.
  api.post('/auth/passkeys/options', { schema: { hide: true } }, async (request, reply) => {
    const current = await signedIn(request)
    if (current === undefined) return await reply.code(403).send({ status: 403, message: 'Unauthorized' })
    const currentPassword = field(request.body, 'current_password')
    if (currentPassword === undefined) throw badRequest(reasons.required('current_password'))
    const account = await auth.stepUp({ token: current.token, currentPassword, client: clientOf(request) })
    const options = await ceremonies.registrationOptions({ id: account.id, username: account.username }, relyingParty(request))
    return { status: 0, message: 'Success', options }
  })

  api.post('/auth/passkeys', { schema: { hide: true } }, async (request, reply) => {
    const current = await signedIn(request)
    if (current === undefined) return await reply.code(403).send({ status: 403, message: 'Unauthorized' })
    const response = (request.body as { response?: unknown } | undefined)?.response
    if (!isCredentialAnswer(response) || !await ceremonies.register(current.record.accountId, response as RegistrationResponseJSON, relyingParty(request), clientName(request.headers['user-agent'] ?? ''))) {
      return await reply.code(400).send({ status: 400, message: 'Bad Request' })
    }
    return { status: 0, message: 'Success' }
  })
  for (const path of ['/auth/signin/passkey/options', '/auth/signin/passkey', '/auth/passkeys/options', '/auth/passkeys']) refuseOtherMethods(api, path, ['POST'])
}
