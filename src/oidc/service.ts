import { hkdfSync } from 'node:crypto'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import type { AdapterPayload, JWK } from 'oidc-provider'
import type Provider from 'oidc-provider'
import { errors } from 'oidc-provider'
import type { TokenRecord } from '@auth-token-service/protocol/layout'
import type { OidcConfig } from '../config/parts/oidc.js'
import type { TokenStore } from '../core/stores/token-store.js'
import type { ApiKeyRecords } from '../core/stores/api-key-records.js'
import type { UserStore } from '../core/stores/user-store.js'
import type { RedisClient } from '@auth-token-service/protocol/redis-connection'
import { clientTokenEnder, createAccessTokenRecords } from './access-tokens.js'
import { createAdapterFactory } from './adapter.js'
import { createMemoryArtifactStore, createRedisArtifactStore, type ArtifactStore } from './artifact-store.js'
import type { OidcClients } from './clients.js'
import { createProviderPages, providerErrorPage, type ProviderPageSettings } from './pages.js'
import { createProvider, type SignInFacts } from './provider.js'
import { createProviderLog } from './provider-log.js'
import { INTERACTION_PREFIX, oidcRoutes } from './routes.js'
import { createSignInLinks } from './sign-in-links.js'
import { watchSigningKeys, type SigningJwks, type SigningKeys } from './signing-keys.js'

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
  /** The sign-in pages' title and form targets: the provider's pages are in their frame (pages.ts). */
  pages: ProviderPageSettings
  /** The service's log: the provider's failures and refusals go there (provider-log.ts). */
  log: FastifyBaseLogger
}

/** Keys for the provider's signed cookies, the same on every instance that shares the sealing key. */
function cookieKey (sealingKey: Buffer): string {
  return Buffer.from(hkdfSync('sha256', sealingKey, Buffer.alloc(0), 'auth-token-service oidc-provider cookies', 32)).toString('base64url')
}

/** The provider's artifacts beside the service's tokens: in its Redis, or (embedded) in this process. */
export function artifactStoreOf (tokens: { kind: 'redis', redis: RedisClient } | { kind: 'in-process' }): ArtifactStore {
  return tokens.kind === 'redis' ? createRedisArtifactStore(tokens.redis) : createMemoryArtifactStore()
}

/** The key prefix of the provider's artifacts. */
export const artifactPrefix = (keyPrefix: string): string => `${keyPrefix}oidc:`

/** What a client's removal ends: its access tokens (OidcClientsDeps.onRemoved). */
export function endClientTokens (tokens: OidcServiceDeps['tokens'], keyPrefix: string, store: ArtifactStore = artifactStoreOf(tokens)): (clientId: string) => Promise<void> {
  return clientTokenEnder(store, artifactPrefix(keyPrefix), tokens)
}

/** The provider and its routes on the public app (when AUTH_OIDC_ISSUER is set). */
export async function registerOidc (app: FastifyInstance, deps: OidcServiceDeps): Promise<void> {
  const { config, tokens, users } = deps
  const prefix = artifactPrefix(deps.keyPrefix)
  const store = deps.store
  const links = createSignInLinks(store, prefix)
  const facts: SignInFacts = {
    issuedAt: deps.issuedAt,
    // The sign-in's methods as the account stands: a password, and a code when it has a second factor.
    amr: async (record) => (await users.findByUsername(record.username))?.secondFactor === true ? ['pwd', 'otp'] : ['pwd']
  }
  const accessTokens = createAccessTokenRecords({ tokens, users, links, store, prefix })
  const sealing = await deps.sealingKeys()
  const pages = createProviderPages(deps.pages)
  const log = createProviderLog(deps.log)
  const watched = (made: Provider): Provider => {
    log.watch(made)
    return made
  }
  const build = (jwks: SigningJwks): Provider => watched(createProvider({
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
    users,
    tokens,
    links,
    // The provider's JWK type is looser than the keys' own (private RSA and EC members).
    jwks: jwks.keys as unknown as JWK[],
    cookieKeys: [sealing.current, ...sealing.previous].map(cookieKey),
    interactionPath: (uid) => `${INTERACTION_PREFIX}${uid}`,
    proxy: deps.proxy,
    facts,
    renderError: providerErrorPage(pages)
  }))
  // oidc-provider fixes its keys when it is made: a rotation makes a new one (its state is all in the stores).
  let provider: Provider | undefined
  const watch = await watchSigningKeys(deps.signingKeys, { onChange: (jwks) => { provider = build(jwks) }, onError: deps.onKeysError })
  provider ??= build(watch.jwks)
  app.addHook('onClose', async () => { watch.stop() })
  await app.register(oidcRoutes, { provider: () => provider ?? build(watch.jwks), path: config.path, tokens, links, facts, pages, log })
}
