import { Type } from 'typebox'
import { ConfigError } from '../config-error.js'
import { variables, type Env } from '../variables.js'

const DAY = 24 * 60 * 60

/** Shortest client secret: introspection answers who holds any token, so a guessable secret would be a leak. */
export const MIN_CLIENT_SECRET_LENGTH = 16

/** Login, Authenticate and Logout: a token's life, and who else may ask about tokens (src/core). */
export const TokensSchema = Type.Object({
  AUTH_TOKEN_TTL_SECONDS: Type.Integer({ minimum: 1, maximum: 365 * DAY, default: 43200, description: 'token lifetime' }),
  AUTH_FEDERATED_TOKEN_TTL_SECONDS: Type.Integer({ minimum: 1, maximum: 365 * DAY, default: 86400, description: 'token lifetime for federated accounts' }),
  AUTH_IDLE_TIMEOUT_SECONDS: Type.Optional(Type.Integer({ minimum: 1, maximum: 365 * DAY, docDefault: 'unset (off)', description: 'a Login token not presented to Authenticate, `/auth/verify` or `/auth/introspect` for this long stops working, within a minute of it ([idle timeout](second-factor.md#the-idle-timeout))' })),
  AUTH_MAX_TOKENS_PER_ACCOUNT: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1000, description: 'active tokens one account may hold; a Login beyond it ends the account\'s oldest-issued, never the one it returns (see [Revocation](revocation-and-sessions.md#revocation))' }),
  AUTH_DENY_TTL_SECONDS: Type.Integer({ minimum: 1, maximum: DAY, default: 300, description: 'how long a terminated token\'s hash stays in the deny set for caching verifiers' }),
  AUTH_LEGACY_PATH_LOGIN: Type.Boolean({ default: true, description: 'accept `/auth/Login/{username}/{password}`' }),
  AUTH_INTROSPECTION_CLIENTS: Type.Array(Type.String({ writeOnly: true }), { default: [], expected: `id:secret pairs (ids of A-Z a-z 0-9 . _ ~ -, secrets of at least ${MIN_CLIENT_SECRET_LENGTH} characters, no comma)`, docDefault: 'unset: `/auth/introspect` off (404)', description: 'who may call introspection (HTTP Basic): `id:secret,id:secret`' }),
  AUTH_REVOCATIONS_KEY: Type.Optional(Type.String({ writeOnly: true, minLength: 32, hint: 'openssl rand -base64 32', description: 'the key a revocation-feed subscriber sends (`Authorization: Bearer`). Unset: the feed answers without a key only on a listener bound to the loopback (the internal listener\'s default), and is off (404) anywhere else' })),
  AUTH_REVOCATIONS_MAX_SUBSCRIBERS: Type.Integer({ minimum: 1, maximum: 100_000, default: 64, description: 'revocation-feed streams at once per instance; past it a new one gets 503 with `Retry-After`' })
}, { $id: 'tokens', title: 'Tokens', description: 'A token\'s life, and who else may ask about tokens: introspection clients and the revocation feed\'s subscribers (the guard\'s cache).' })

/** One AUTH_INTROSPECTION_CLIENTS entry: a client id and its secret. */
export interface IntrospectionClient {
  id: string
  secret: string
}

export interface TokenSettings {
  tokenTtlSeconds: number
  federatedTokenTtlSeconds: number
  /** A Login token not presented for this long stops working; undefined: off, and Authenticate costs what it always did. */
  idleTimeoutSeconds: number | undefined
  /** Active tokens one account may hold; a Login beyond it ends the account's oldest-issued. */
  maxTokensPerAccount: number
  /** How long a terminated token's hash stays in the deny set for caching verifiers. */
  denyTtlSeconds: number
  legacyPathLogin: boolean
  /** Who may call POST /auth/introspect (HTTP Basic); empty: the endpoint is off (404). */
  introspectionClients: readonly IntrospectionClient[]
  /** Bearer key a revocation-feed subscriber must send; undefined: see revocationsOpen. */
  revocationsKey: string | undefined
  /** Revocation-feed subscribers at once, per instance; past it a new one is answered 503. */
  revocationsMaxSubscribers: number
}

/** `id:secret` entries: the id may be logged and named in errors; the secret never is. */
function introspectionClients (entries: string[]): IntrospectionClient[] {
  const name = 'AUTH_INTROSPECTION_CLIENTS'
  const clients: IntrospectionClient[] = []
  for (const entry of entries) {
    const colon = entry.indexOf(':')
    const id = colon < 0 ? entry : entry.slice(0, colon)
    const secret = colon < 0 ? '' : entry.slice(colon + 1)
    if (!/^[A-Za-z0-9._~-]{1,64}$/.test(id)) throw new ConfigError(name, 'expected id:secret pairs, the id 1-64 of A-Z a-z 0-9 . _ ~ -')
    if (secret.length < MIN_CLIENT_SECRET_LENGTH) throw new ConfigError(name, `the secret of client "${id}" is shorter than ${MIN_CLIENT_SECRET_LENGTH} characters`)
    if (clients.some((client) => client.id === id)) throw new ConfigError(name, `client "${id}" is given twice`)
    clients.push({ id, secret })
  }
  return clients
}

export function readTokens (env: Env): TokenSettings {
  const vars = variables(TokensSchema, env)
  return {
    tokenTtlSeconds: vars.read('AUTH_TOKEN_TTL_SECONDS'),
    federatedTokenTtlSeconds: vars.read('AUTH_FEDERATED_TOKEN_TTL_SECONDS'),
    idleTimeoutSeconds: vars.read('AUTH_IDLE_TIMEOUT_SECONDS'),
    maxTokensPerAccount: vars.read('AUTH_MAX_TOKENS_PER_ACCOUNT'),
    denyTtlSeconds: vars.read('AUTH_DENY_TTL_SECONDS'),
    legacyPathLogin: vars.read('AUTH_LEGACY_PATH_LOGIN'),
    introspectionClients: introspectionClients(vars.read('AUTH_INTROSPECTION_CLIENTS')),
    revocationsKey: vars.read('AUTH_REVOCATIONS_KEY'),
    revocationsMaxSubscribers: vars.read('AUTH_REVOCATIONS_MAX_SUBSCRIBERS')
  }
}
