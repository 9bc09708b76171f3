import Provider, { errors, interactionPolicy, type Adapter, type Configuration, type ErrorOut, type Account, type Grant, type JWK, type KoaContextWithOIDC } from 'oidc-provider'
import { generateToken } from '@auth-token-service/protocol/token'
import type { OidcConfig } from '../config/parts/oidc.js'
import type { UserStore } from '../core/stores/user-store.js'
import type { TokenStore } from '../core/stores/token-store.js'
import type { SignInLinks } from './sign-in-links.js'
import { clientSecretMatches } from './client-secret.js'
import type { TokenRecord } from '@auth-token-service/protocol/layout'
import type { PageSources } from './page-sources.js'
import { signInToken } from './sign-in-token.js'

/**
 * The OpenID Connect provider: oidc-provider (panva, OpenID Certified) configured as the contract
 * says (api-contract, Single sign-on): authorization code with PKCE S256 (required of public
 * clients), refresh tokens rotated at each use (a reused one ends its grant), the device flow,
 * RP-initiated and back-channel logout; no implicit or hybrid flow, no consent page (clients are
 * the operators'). Sign-in is the service's own page (interaction-routes.ts); its sign-in token is
 * what the provider's session stands on (policy below), and its access tokens are the service's.
 */

/** The browser's sign-in cookie (the contract's AuthToken1). */
export const SIGN_IN_COOKIE = 'AuthToken1'

export interface ProviderDeps {
  config: OidcConfig
  adapter: (name: string) => Adapter
  users: Pick<UserStore, 'findById'>
  tokens: Pick<TokenStore, 'find'>
  links: SignInLinks
  /** Private signing keys, the current first (signing-keys.ts). */
  jwks: readonly JWK[]
  /** Keys the provider's cookies are signed with, the current first. */
  cookieKeys: readonly string[]
  /** Where a browser goes to sign in for an interaction (the path and `uid`). */
  interactionPath: (uid: string) => string
  /** Trust X-Forwarded-* (AUTH_TRUST_PROXY set). */
  proxy: boolean
  facts: SignInFacts
  /** The page a browser sees when the provider cannot send it back to the client (pages.ts). */
  renderError: (ctx: KoaContextWithOIDC, out: ErrorOut, error: unknown) => Promise<void>
  /** The device flow's and the logout's pages, in the sign-in pages' style (page-sources.ts). */
  pages: Pick<PageSources, 'deviceFlow' | 'rpInitiatedLogout'>
}

/** The sign-in token a request carries, when it is an active one of `accountId` (a Login token: never an access token of the provider's). */
async function signInOf (ctx: KoaContextWithOIDC, tokens: Pick<TokenStore, 'find'>, accountId?: string): Promise<{ hash: string, ttlMs: number, record: TokenRecord } | undefined> {
  const found = await signInToken(tokens, ctx.cookies.get(SIGN_IN_COOKIE))
  if (found === undefined || (accountId !== undefined && found.record.accountId !== accountId)) return undefined
  return { ...found, ttlMs: found.record.expiresAt - Date.now() }
}

/** The revocation endpoint's rule: a client's own token; another's refused (a public client's request answered, nothing revoked). */
async function revocationAllowed (_ctx: KoaContextWithOIDC, client: { clientId: string, clientAuthMethod?: string | undefined }, token: { clientId?: string | undefined }): Promise<boolean> {
  if (token.clientId === client.clientId) return true
  if (client.clientAuthMethod === 'none') return false
  throw new errors.InvalidRequest('client is not authorized to revoke the presented token')
}

/** What the provider's session takes of a sign-in: when it was made (epoch seconds) and how (amr, by its token's hash). */
export interface SignInFacts {
  issuedAt: (record: TokenRecord) => number
  amr: (record: TokenRecord, tokenHash: string) => Promise<string[]>
}

/**
 * The login prompt's checks, and one of the service's: the provider's session stands only while
 * the browser's sign-in token of the same account is active. Signed out (or another person signed
 * in) since: sign in again; with prompt=none, `login_required`. Passing, it (re)links the session to
 * the sign-in token now in use, so the tokens it gives out end with that one.
 */
/** An account as the provider knows it: its id the subject, its claims by scope; none for a disabled or service account. */
async function accountOf (users: Pick<UserStore, 'findById'>, sub: string): Promise<Account | undefined> {
  const account = await users.findById(sub)
  if (account === null || account.disabled || account.kind === 'service') return undefined
  return {
    accountId: sub,
    claims: async (_use, scope) => ({
      sub,
      preferred_username: account.username,
      ...(scope.split(' ').includes('groups') ? { groups: [...account.groups] } : {})
    })
  }
}

/** No consent page: the operators registered the client, so what it asks of the account is granted (loadExistingGrant). */
async function grantFor (ctx: KoaContextWithOIDC): Promise<Grant | undefined> {
  const { client, session, provider } = ctx.oidc
  const accountId = session?.accountId
  if (client === undefined || accountId === undefined) return undefined
  const grantId = ctx.oidc.result?.consent?.grantId ?? session?.grantIdFor(client.clientId)
  const grant = (grantId === undefined ? undefined : await provider.Grant.find(grantId)) ?? new provider.Grant({ accountId, clientId: client.clientId })
  grant.addOIDCScope([...ctx.oidc.requestParamOIDCScopes].join(' '))
  grant.addOIDCClaims([...ctx.oidc.requestParamClaims])
  await grant.save()
  return grant
}

function policy (tokens: Pick<TokenStore, 'find'>, users: Pick<UserStore, 'findById'>, links: SignInLinks, facts: SignInFacts): interactionPolicy.DefaultPolicy {
  const base = interactionPolicy.base()
  const login = base.get('login')
  // Single sign-on from the service's own sign-in: a browser signed in here (AuthToken1) but new to
  // the provider gets its session from that sign-in, asked nothing (prompt=none included). In place
  // of the provider's own no_session check (a prompt's checks run side by side, so one that logs the
  // session in must be the one that looks for it). prompt=login and max_age still ask.
  login?.checks.remove('no_session')
  login?.checks.add(new interactionPolicy.Check('no_session', 'End-User authentication is required', 'login_required', async (ctx) => {
    const { session } = ctx.oidc
    if (session === undefined) return interactionPolicy.Check.REQUEST_PROMPT
    if (session.accountId !== undefined) return interactionPolicy.Check.NO_NEED_TO_PROMPT
    const signIn = await signInOf(ctx, tokens)
    const account = signIn === undefined ? undefined : await accountOf(users, signIn.record.accountId)
    const client = ctx.oidc.client
    if (signIn === undefined || account === undefined || client === undefined) return interactionPolicy.Check.REQUEST_PROMPT
    session.loginAccount({ accountId: account.accountId, loginTs: facts.issuedAt(signIn.record), amr: await facts.amr(signIn.record, signIn.hash), transient: false })
    await links.link(session.uid, signIn.hash, signIn.ttlMs)
    // The account and grant were looked for before the session had an account: found now, as the
    // provider finds them for a session it knew (its loadAccount and loadGrant), for the consent
    // prompt's checks and the code.
    ctx.oidc.entity('Account', account)
    const grant = await grantFor(ctx)
    if (grant === undefined) return interactionPolicy.Check.REQUEST_PROMPT
    session.ensureClientContainer(client.clientId)
    session.grantIdFor(client.clientId, grant.jti)
    ctx.oidc.entity('Grant', grant)
    return interactionPolicy.Check.NO_NEED_TO_PROMPT
  }), 0)
  // Its error named: a check added after the prompt was made gets no default, and prompt=none would say interaction_required.
  login?.checks.add(new interactionPolicy.Check('signed_out', 'the sign-in session ended', 'login_required', async (ctx) => {
    const { session } = ctx.oidc
    if (session === undefined || session.accountId === undefined) return interactionPolicy.Check.NO_NEED_TO_PROMPT
    const signIn = await signInOf(ctx, tokens, session.accountId)
    if (signIn === undefined) return interactionPolicy.Check.REQUEST_PROMPT
    await links.link(session.uid, signIn.hash, signIn.ttlMs)
    return interactionPolicy.Check.NO_NEED_TO_PROMPT
  }))
  return base
}

export function createProvider (deps: ProviderDeps): Provider {
  const { config, users, tokens, links } = deps
  const configuration: Configuration = {
    adapter: deps.adapter,
    clients: [],
    jwks: { keys: [...deps.jwks] },
    cookies: { keys: [...deps.cookieKeys], long: { signed: true }, short: { signed: true } },
    findAccount: async (_ctx, sub) => await accountOf(users, sub),
    claims: { openid: ['sub', 'preferred_username', 'amr', 'auth_time'], groups: ['groups'] },
    scopes: ['openid', 'offline_access', 'groups'],
    conformIdTokenClaims: false,
    responseTypes: ['code'],
    pkce: { required: (_ctx, client) => client.tokenEndpointAuthMethod === 'none' },
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    expiresWithSession: () => false,
    allowOmittingSingleRegisteredRedirectUri: false,
    clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'none'],
    enabledJWA: { idTokenSigningAlgValues: ['RS256', 'ES256'] },
    clientDefaults: { id_token_signed_response_alg: 'RS256', require_auth_time: true, grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] },
    features: {
      devInteractions: { enabled: false },
      // A client revokes only its own tokens (RFC 7009 2.1), as the provider's default does: declared,
      // so that the provider prints no notice of its default on the service's stdout (its log).
      revocation: { enabled: true, allowedPolicy: revocationAllowed },
      userinfo: { enabled: true },
      rpInitiatedLogout: { enabled: true, ...deps.pages.rpInitiatedLogout },
      backchannelLogout: { enabled: true },
      // RFC 8628 for command-line clients, public ones included (clients.ts gives every client the grant).
      deviceFlow: { enabled: true, ...deps.pages.deviceFlow },
      introspection: { enabled: false }
    },
    renderError: deps.renderError,
    interactions: {
      policy: policy(tokens, users, links, deps.facts),
      url: (_ctx, interaction) => deps.interactionPath(interaction.uid)
    },
    loadExistingGrant: grantFor,
    // The provider fetches nothing but the back-channel logout URIs operators registered (no dynamic
    // registration, no request_uri, no client jwks_uri): on an internal network those are private
    // addresses, which its guard against server-side request forgery (a dispatcher that refuses
    // special-use IPs) would refuse every one of. The global dispatcher, then; its 2.5 s timeout stays.
    fetch: async (url, options) => await fetch(url, { ...options, dispatcher: undefined }),
    ttl: {
      AccessToken: config.accessTokenTtlSeconds,
      IdToken: config.idTokenTtlSeconds,
      RefreshToken: config.refreshTokenTtlSeconds,
      Grant: config.refreshTokenTtlSeconds,
      Session: config.refreshTokenTtlSeconds,
      AuthorizationCode: 60,
      DeviceCode: 600,
      Interaction: 600
    }
  }
  const provider = new Provider(config.issuer, configuration)
  provider.proxy = deps.proxy
  // The stored secret is its digest (clients.ts): a presented one is compared by its digest, in constant time.
  // The client's `clientSecret` is the hash the store keeps (clients.ts metadata), compared by client-secret.ts.
  provider.Client.prototype.compareClientSecret = function compareClientSecret (this: { clientSecret?: string }, actual: string): boolean {
    return clientSecretMatches(actual, this.clientSecret ?? '')
  }
  // An access token is a token of the service: made as Login makes one, in its account's bucket.
  // The provider's own generator runs first (it settles the token's format, opaque, and checks it); its value is not used.
  const accessTokens = provider.AccessToken.prototype as unknown as { generateTokenId: (this: { accountId?: unknown }) => string }
  const settleFormat = accessTokens.generateTokenId
  accessTokens.generateTokenId = function generateTokenId () {
    settleFormat.call(this)
    if (typeof this.accountId !== 'string') throw new errors.InvalidGrant('an access token without an account')
    return generateToken(this.accountId)
  }
  return provider
}
