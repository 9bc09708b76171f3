import { generateKeyPairSync, hkdfSync } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import type { AdapterPayload, JWK } from 'oidc-provider'
import { errors } from 'oidc-provider'
import type { TokenRecord } from '@auth-token-service/protocol/layout'
import type { OidcConfig } from '../config/parts/oidc.js'
import type { TokenStore } from '../core/stores/token-store.js'
import type { ApiKeyRecords } from '../core/stores/api-key-records.js'
import type { UserStore } from '../core/stores/user-store.js'
import type { RedisClient } from '@auth-token-service/protocol/redis-connection'
import { createAccessTokenRecords } from './access-tokens.js'
import { createAdapterFactory } from './adapter.js'
import { createMemoryArtifactStore, createRedisArtifactStore, type ArtifactStore } from './artifact-store.js'
import type { OidcClients } from './clients.js'
import { createProvider } from './provider.js'
import { INTERACTION_PREFIX, oidcRoutes } from './routes.js'
import { createSignInLinks } from './sign-in-links.js'

/** What the provider stands on, from the service's backends. */
export interface OidcServiceDeps {
  config: OidcConfig
  /** The service's token store: its Redis for the provider's artifacts, or the embedded default's memory. */
  tokens: TokenStore & ApiKeyRecords & ({ kind: 'redis', redis: RedisClient } | { kind: 'in-process' })
  users: Pick<UserStore, 'findById' | 'findByUsername'>
  clients: Pick<OidcClients, 'metadataOf'>
  /** AUTH_REDIS_KEY_PREFIX. */
  keyPrefix: string
  /** Sealing keys (the TOTP key and its predecessors): the provider's cookie keys are derived from them. */
  sealingKeys: () => Promise<{ current: Buffer, previous: readonly Buffer[] }>
  /** The provider's signing keys, the current first; absent: made for this process alone (tests). */
  signingKeys?: (() => Promise<readonly JWK[]>) | undefined
  proxy: boolean
  /** When a Login token was issued or last refreshed, epoch seconds. */
  issuedAt: (record: TokenRecord) => number
}

/** Keys for the provider's signed cookies, the same on every instance that shares the sealing key. */
function cookieKey (sealingKey: Buffer): string {
  return Buffer.from(hkdfSync('sha256', sealingKey, Buffer.alloc(0), 'auth-token-service oidc-provider cookies', 32)).toString('base64url')
}

/** An RS256 and an ES256 key of this process alone: for tests, until keys are stored (signing-keys.ts). */
function processKeys (): JWK[] {
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' })
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' })
  return [{ ...rsa, alg: 'RS256', use: 'sig', kid: 'process-rs256' } as JWK, { ...ec, alg: 'ES256', use: 'sig', kid: 'process-es256' } as JWK]
}

/** The provider and its routes on the public app (when AUTH_OIDC_ISSUER is set). */
export async function registerOidc (app: FastifyInstance, deps: OidcServiceDeps): Promise<void> {
  const { config, tokens, users } = deps
  const prefix = `${deps.keyPrefix}oidc:`
  const store: ArtifactStore = tokens.kind === 'redis' ? createRedisArtifactStore(tokens.redis) : createMemoryArtifactStore()
  const links = createSignInLinks(store, prefix)
  const accessTokens = createAccessTokenRecords({ tokens, users, links, store, prefix })
  const sealing = await deps.sealingKeys()
  const provider = createProvider({
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
    jwks: deps.signingKeys === undefined ? processKeys() : await deps.signingKeys(),
    cookieKeys: [sealing.current, ...sealing.previous].map(cookieKey),
    interactionPath: (uid) => `${INTERACTION_PREFIX}${uid}`,
    proxy: deps.proxy
  })
  await app.register(oidcRoutes, { provider, path: config.path, tokens, users, links, issuedAt: deps.issuedAt })
}
