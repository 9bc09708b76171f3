import { hkdfSync } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { CookieSerializeOptions } from '@fastify/cookie'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import type { AdapterPayload, JWK, KoaContextWithOIDC } from 'oidc-provider'
import Provider, { errors } from 'oidc-provider'
import type { TokenRecord } from '@auth-token-service/protocol/layout'
import type { OidcConfig } from '../config/parts/oidc.js'
import type { ClientContext } from '../core/auth.js'
import type { AuditLog } from '../core/stores/audit-log.js'
import type { RevocationFeed } from '../core/stores/revocation-feed.js'
import type { TokenStore } from '../core/stores/token-store.js'
import type { ApiKeyRecords } from '../core/stores/api-key-records.js'
import type { UserStore } from '../core/stores/user-store.js'
import type { RedisClient } from '@auth-token-service/protocol/redis-connection'
import { clientTokenEnder, createAccessTokenRecords } from './access-tokens.js'
import { createAdapterFactory } from './adapter.js'
import { createClientRemovals, type ClientRemovals } from './client-removals.js'
import { startBackchannelLogout, type BackchannelLogout } from './backchannel-logout.js'
import { createPageSources } from './page-sources.js'
import { attachProviderHooks, type ProviderHooksDeps } from './provider-hooks.js'
import { createMemoryArtifactStore, createRedisArtifactStore, type ArtifactStore } from './artifact-store.js'
import type { OidcClients } from './clients.js'
import { createProviderPages, providerErrorPage, type ProviderPageSettings } from './pages.js'
import { createProvider, SIGN_IN_COOKIE, type SignInFacts } from './provider.js'
import { createProviderLog } from './provider-log.js'
import { INTERACTION_PREFIX, oidcRoutes } from './routes.js'
import { createSignInLinks, type SignInLinks } from './sign-in-links.js'
import { requestMemo } from './request-memo.js'
import { watchSigningKeys, type SigningJwks, type SigningKeys } from './signing-keys.js'
import { signInToken } from './sign-in-token.js'

/** What the provider stands on, from the service's backends. */
export interface OidcServiceDeps {
  config: OidcConfig
  /** The service's token store: its Redis for the provider's artifacts, or the embedded default's memory. */
  tokens: TokenStore & ApiKeyRecords & ({ kind: 'redis', redis: RedisClient } | { kind: 'in-process' })
  users: Pick<UserStore, 'findById' | 'findByUsername'>
  clients: Pick<OidcClients, 'metadataOf'>
  /** AUTH_REDIS_KEY_PREFIX. */
  keyPrefix: string
  /** The artifacts' store (artifactStoreOf): the same one a client's removal ends tokens in (in-process, one store). */
  store: ArtifactStore
  /** Sealing keys (the TOTP key and its predecessors): the provider's cookie keys are derived from them. */
  sealingKeys: () => Promise<{ current: Buffer, previous: readonly Buffer[] }>
  /** The provider's signing keys (signing-keys.ts), watched for rotations. */
  signingKeys: SigningKeys
  /** Told of a failed look at the signing keys (the provider keeps the keys it has). */
  onKeysError: (error: unknown) => void
  proxy: boolean
  /** When a Login token was issued or last refreshed, epoch seconds. */
  issuedAt: (record: TokenRecord) => number
  /** How a Login token's sign-in was made, as its session recorded it (Sessions.amrOf); null when unknown. */
  amrOf: (tokenHash: string) => Promise<readonly string[] | null>
  /** The sign-in pages' title and form targets: the provider's pages are in their frame (pages.ts, flow-pages.ts). */
  pages: ProviderPageSettings
  /** The service's log: the provider's failures and refusals go there (provider-log.ts), and the back-channel's. */
  log: FastifyBaseLogger
  /** The ended tokens (the same object as `tokens`): a sign-in's end is a back-channel logout. */
  revocations: Pick<RevocationFeed, 'watchRevocations' | 'listDenied'>
  audit: Pick<AuditLog, 'record'>
  /** The service's Logout: an RP-initiated logout the person confirms ends their sign-in with it. */
  logout: (token: string, client: ClientContext) => Promise<void>
  /** The AuthToken1 cookie's attributes (clearing it needs the same). */
  cookie: CookieSerializeOptions
}

/** Keys for the provider's signed cookies, the same on every instance that shares the sealing key. */
function cookieKey (sealingKey: Buffer): string {
  return Buffer.from(hkdfSync('sha256', sealingKey, Buffer.alloc(0), 'auth-token-service oidc-provider cookies', 32)).toString('base64url')
}

/** The provider's artifacts beside the service's tokens: in its Redis, or (embedded) in this process. */
export function artifactStoreOf (tokens: { kind: 'redis', redis: RedisClient } | { kind: 'in-process' }): ArtifactStore {
  return tokens.kind === 'redis' ? createRedisArtifactStore(tokens.redis) : createMemoryArtifactStore()
}

/**
 * The layout of the provider's artifacts (their key names and what their values hold): a change is
 * a new version, whose keys stand apart from the old ones. The old ones are never read again and
 * expire by themselves (every artifact key has its model's lifetime); the apps' sign-ins and
 * tokens made under the old version end with the upgrade, as a changed layout of theirs must.
 */
export const ARTIFACT_LAYOUT_VERSION = 1

/** The key prefix of the provider's artifacts: `<AUTH_REDIS_KEY_PREFIX>oidc<version>:`. */
export const artifactPrefix = (keyPrefix: string): string => `${keyPrefix}oidc${ARTIFACT_LAYOUT_VERSION}:`

/** What a client's removal ends: its access tokens (OidcClientsDeps.onRemoved). */
export function endClientTokens (tokens: OidcServiceDeps['tokens'], keyPrefix: string, store: ArtifactStore = artifactStoreOf(tokens)): (clientId: string) => Promise<void> {
  return clientTokenEnder(store, artifactPrefix(keyPrefix), tokens)
}

/** Where a client's removal is marked for every instance (clients.ts keeps clients in memory only with it). */
export function clientRemovalsOf (tokens: OidcServiceDeps['tokens'], keyPrefix: string, store: ArtifactStore = artifactStoreOf(tokens)): ClientRemovals {
  return createClientRemovals(store, artifactPrefix(keyPrefix))
}

/** The username of the browser's active sign-in (its AuthToken1, a Login token), or undefined. */
function signedInAs (tokens: Pick<TokenStore, 'find'>): (ctx: KoaContextWithOIDC) => Promise<string | undefined> {
  return async (ctx) => (await signInToken(tokens, ctx.cookies.get(SIGN_IN_COOKIE)))?.record.username
}

/** The provider and its routes on the public app (when AUTH_OIDC_ISSUER is set). */
export async function registerOidc (app: FastifyInstance, deps: OidcServiceDeps): Promise<void> {
  const { config, tokens, users } = deps
  const prefix = artifactPrefix(deps.keyPrefix)
  const store = deps.store
  // Read once per provider request (request-memo.ts): a refresh needs each twice.
  const storedLinks = createSignInLinks(store, prefix)
  const signInOf = requestMemo(() => Provider.ctx, async (uid: string) => await storedLinks.signInOf(uid))
  const links: SignInLinks = {
    ...storedLinks,
    signInOf: signInOf.read,
    async link (sessionUid, signInHash, ttlMs) {
      await storedLinks.link(sessionUid, signInHash, ttlMs)
      signInOf.set(sessionUid, signInHash)
    }
  }
  const accountById = requestMemo(() => Provider.ctx, async (id: string) => await users.findById(id))
  const accounts: Pick<UserStore, 'findById'> = { findById: accountById.read }
  const facts: SignInFacts = {
    issuedAt: deps.issuedAt,
    // How the sign-in was made, as its Login recorded it; for a session from before that was
    // kept, as the account stands: a password, and a code when it has a second factor.
    amr: async (record, tokenHash) => {
      const recorded = await deps.amrOf(tokenHash)
      if (recorded !== null) return [...recorded]
      return (await users.findByUsername(record.username))?.secondFactor === true ? ['pwd', 'otp'] : ['pwd']
    }
  }
  const requestClients = new WeakMap<IncomingMessage, ClientContext>()
  const accessTokens = createAccessTokenRecords({ tokens, users: accounts, links, store, prefix })
  const sealing = await deps.sealingKeys()
  const pages = createProviderPages(deps.pages)
  const log = createProviderLog(deps.log)
  const clientOf = (ctx: KoaContextWithOIDC): ClientContext => requestClients.get(ctx.req) ?? { ip: ctx.ip, userAgent: ctx.get('user-agent') }
  const flowPages = createPageSources({ signinTitle: deps.pages.title, redirectAllowed: deps.pages.redirectAllowed, users, signedInAs: signedInAs(tokens), clientOf })
  // Set below, before any request or revocation can reach the provider.
  let backchannel: BackchannelLogout | undefined
  const hooks: ProviderHooksDeps = {
    pages: flowPages,
    tokens,
    users,
    logout: deps.logout,
    audit: deps.audit,
    backchannel: { retry: (notice, failure) => { backchannel?.retry(notice, failure) } },
    clientOf,
    cookie: deps.cookie,
    onError: (error, what) => { deps.log.error({ err: error }, what) }
  }
  const build = (jwks: SigningJwks): Provider => {
    const made = createProvider({
      config,
      adapter: createAdapterFactory({
        store,
        prefix,
        accessTokens,
        sessionAlive: async (uid) => {
          const signIn = await links.signInOf(uid)
          return signIn !== undefined && await tokens.find(signIn, true) !== null
        },
        // The metadata's fields are oidc-provider's client metadata (clients.ts), which its payload type indexes loosely.
        client: async (clientId) => await deps.clients.metadataOf(clientId) as AdapterPayload | undefined,
        invalid: (message) => new errors.InvalidGrant(message)
      }),
      users: accounts,
      tokens,
      links,
      // The provider's JWK type is looser than the keys' own (private RSA and EC members).
      jwks: jwks.keys as unknown as JWK[],
      cookieKeys: [sealing.current, ...sealing.previous].map(cookieKey),
      interactionPath: (uid) => `${INTERACTION_PREFIX}${uid}`,
      proxy: deps.proxy,
      renderError: providerErrorPage(pages),
      pages: flowPages,
      facts
    })
    log.watch(made)
    attachProviderHooks(made, hooks)
    return made
  }
  // oidc-provider fixes its keys when it is made: a rotation makes a new one (its state is all in the stores).
  // A change comes from the watch's timer or a rotation's notice, never before it returns.
  const watch = await watchSigningKeys(deps.signingKeys, { onChange: (jwks) => { provider = build(jwks) }, onError: deps.onKeysError })
  let provider = build(watch.jwks)
  const current = (): Provider => provider
  app.addHook('onClose', async () => { watch.stop() })
  const started = startBackchannelLogout({ revocations: deps.revocations, tokens, links, provider: current, log: deps.log, retryDelaysMs: config.backchannelRetryDelaysMs })
  backchannel = started
  app.addHook('onClose', async () => { await started.stop() })
  await app.register(oidcRoutes, { provider: current, path: config.path, tokens, links, facts, pages, log, requestClients })
}
