import { fastifyCookie, type CookieSerializeOptions } from '@fastify/cookie'
import type Koa from 'koa'
import type Provider from 'oidc-provider'
import type { KoaContextWithOIDC } from 'oidc-provider'
import { hashToken, isTokenShaped, TOKEN_COOKIE } from '@auth-token-service/protocol/token'
import type { ClientContext } from '../core/auth.js'
import type { AuditLog } from '../core/stores/audit-log.js'
import type { OutcomeOf } from '../core/events.js'
import type { TokenStore } from '../core/stores/token-store.js'
import type { UserStore } from '../core/stores/user-store.js'
import type { BackchannelLogout } from './backchannel-logout.js'
import type { PageSources } from './page-sources.js'

/**
 * What the service adds around oidc-provider's own routes: the audit event of an authorization,
 * the sign-out of the service when a person confirms an RP-initiated logout, the service's pages
 * where the provider would post a form on by a script, and a second chance for the logout tokens the provider's end_session sends.
 */

export interface ProviderHooksDeps {
  pages: Pick<PageSources, 'replaceFormPost'>
  tokens: Pick<TokenStore, 'find'>
  users: Pick<UserStore, 'findById'>
  /** The service's Logout (the token ended everywhere at once, its session gone, audited). */
  logout: (token: string, client: ClientContext) => Promise<void>
  audit: Pick<AuditLog, 'record'>
  backchannel: Pick<BackchannelLogout, 'retry'>
  /** The client of a request as the service's trust of proxies sees it (routes.ts records it). */
  clientOf: (ctx: KoaContextWithOIDC) => ClientContext
  /** The AuthToken1 cookie's attributes: clearing it needs the same ones. */
  cookie: CookieSerializeOptions
  /** Told of a failure that does not fail the request (an audit record not made, a sign-out not done). */
  onError: (error: unknown, what: string) => void
}

type MaybeOidc = Koa.ParameterizedContext<Koa.DefaultState, Koa.DefaultContext & { oidc?: KoaContextWithOIDC['oidc'] }>

function withOidc (ctx: MaybeOidc): ctx is MaybeOidc & KoaContextWithOIDC {
  return ctx.oidc !== undefined
}

/** A session oidc-provider destroyed in this request (its end_session with `logout`): its `destroyed` flag, which its types do not declare. */
function destroyed (session: object | undefined): boolean {
  return session !== undefined && 'destroyed' in session && session.destroyed === true
}

/** Where an authorization was made: the authorization endpoint (a code), or the device flow's pages. */
const DEVICE_ROUTES = new Set(['code_verification', 'device_resume'])

export function attachProviderHooks (provider: Provider, deps: ProviderHooksDeps): void {
  const { clientOf } = deps

  /**
   * The person confirmed the logout an app asked for: their sign-in at the service ends too (a
   * Logout of the browser's token: its OpenID tokens end with it, at once), and its cookie goes.
   * Only for a session the provider had and destroyed on that confirmation, and a sign-in of the
   * same account: a browser sent to the endpoint by another site, with no session to end, is
   * signed out of nothing.
   */
  async function signOutOfService (ctx: KoaContextWithOIDC): Promise<void> {
    const session = ctx.oidc.session
    const accountId = session?.accountId
    if (ctx.status !== 303 || !destroyed(session) || accountId === undefined) return
    const token = ctx.cookies.get(TOKEN_COOKIE)
    if (token === undefined || !isTokenShaped(token)) return
    const record = await deps.tokens.find(hashToken(token), true)
    if (record === null || record.accountId !== accountId || record.oidc !== undefined || record.keyId !== undefined) return
    await deps.logout(token, clientOf(ctx))
    const { secure, ...attributes } = deps.cookie
    ctx.append('set-cookie', fastifyCookie.serialize(TOKEN_COOKIE, '', { ...attributes, secure: secure === true, expires: new Date(0), maxAge: 0 }))
  }

  provider.use(async (ctx: MaybeOidc, next) => {
    await next()
    if (!withOidc(ctx)) return
    if (deps.pages.replaceFormPost(ctx)) return
    if (ctx.oidc.route === 'end_session_confirm') {
      // Not swallowed: a confirmation that could not sign the person out must not say it did.
      await signOutOfService(ctx)
    }
  })

  async function recordAuthorized (ctx: KoaContextWithOIDC): Promise<void> {
    const accountId = ctx.oidc.session?.accountId
    const clientId = ctx.oidc.client?.clientId
    if (accountId === undefined || clientId === undefined) return
    const account = await deps.users.findById(accountId)
    const client = clientOf(ctx)
    const outcome: OutcomeOf<'oidc.authorized'> = DEVICE_ROUTES.has(ctx.oidc.route) ? `device:${clientId}` : `code:${clientId}`
    deps.audit.record({ event: 'oidc.authorized', accountId, username: account?.username, clientIp: client.ip, userAgent: client.userAgent, outcome, clientId })
  }

  // A code handed to a client, or a device's request allowed.
  provider.on('authorization.success', (ctx: KoaContextWithOIDC) => {
    recordAuthorized(ctx).catch((error: unknown) => { deps.onError(error, 'the oidc.authorized event was not recorded') })
  })
  // The provider's end_session sends each logout token once: a failed one is tried again on the back-channel's schedule.
  provider.on('backchannel.error', (_ctx: KoaContextWithOIDC, error: Error, client: { clientId: string }, accountId: string, sid: string) => {
    deps.backchannel.retry({ clientId: client.clientId, accountId, sid }, error)
  })
}
