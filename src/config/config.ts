import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { availableParallelism } from 'node:os'
import type { Argon2Policy, HashingLimits } from '../passwords/hasher.js'
import { DEFAULT_KEY_PREFIX } from '@auth-token-service/protocol/layout'
import type { RedisTopology } from '../core/stores/redis/client.js'
import type { MinReplicaAcks } from '../core/stores/redis/replica-acks.js'
import { DEFAULT_LOG_BUFFER_BYTES, LOG_FLUSH_BYTES } from '../logging/log-destination.js'
import type { LdapConfig } from '../federation/ldap-directory.js'
import { decodeWebhookSecret } from '../webhooks/signature.js'

/**
 * Every setting of the service, read once at start. Precedence: explicit
 * override, then environment, then default. A bad value stops the start with
 * one line naming the variable (ConfigError); nothing here knows Fastify.
 */

export type TrustProxy = boolean | number | string[]

export interface Config {
  host: string
  port: number
  /** NODE_ENV: only how logs look at a terminal (logging.ts); it decides nothing about security (an unset NODE_ENV must not weaken a deployment). */
  nodeEnv: string
  logLevel: string
  /** Log text held while stdout takes none (its reader slow or stopped); past it lines are dropped and counted. */
  logBufferBytes: number
  databaseUrl: string | undefined
  /** Where tokens live: REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS (one of them); undefined: in-process. */
  redis: RedisTopology | undefined
  /** Where the embedded PGlite keeps its files when DATABASE_URL is unset. */
  dataDir: string
  redisKeyPrefix: string
  tokenTtlSeconds: number
  federatedTokenTtlSeconds: number
  /** How long a terminated token's hash stays in the deny set for caching verifiers. */
  denyTtlSeconds: number
  /** The longest life an API key may be given, in days (AUTH_API_KEY_MAX_DAYS; default 365). */
  apiKeyMaxDays: number
  /** Live API keys one account may hold (AUTH_API_KEYS_PER_ACCOUNT; default 50). */
  apiKeysPerAccount: number
  cookieSecure: boolean
  cookieDomain: string | undefined
  bootstrapUsername: string | undefined
  bootstrapPassword: string | undefined
  /** Give an existing bootstrap account the bootstrap password again (at every start while set). */
  bootstrapReset: boolean
  legacyPathLogin: boolean
  maxFailedLogins: number
  lockoutSeconds: number
  maxLockoutSeconds: number
  maxFailedLoginsPerIp: number
  ipWindowSeconds: number
  /**
   * Requests one client (an address; an IPv6 /64) may make per window to each route anyone may call
   * before signing in: passkey options, a passkey's answer, the code step (AUTH_PRESIGNIN_REQUESTS_PER_IP).
   */
  preSignInRequestsPerIp: number
  /** That window (AUTH_PRESIGNIN_WINDOW_SECONDS). */
  preSignInWindowSeconds: number
  trustProxy: TrustProxy
  bodyLimitBytes: number
  requestTimeoutMs: number
  redisCommandTimeoutMs: number
  /** Replica acknowledgements a revocation needs before `Success` (AUTH_REDIS_MIN_REPLICA_ACKS); 'auto': from the topology. */
  redisMinReplicaAcks: MinReplicaAcks
  argon2: Argon2Policy
  hashing: HashingLimits
  /** Active tokens one account may hold; a Login beyond it ends the account's oldest-issued. */
  maxTokensPerAccount: number
  /**
   * Serve on a Redis whose persistence can undo an acknowledged revocation on a restart (snapshots
   * only, appendfsync everysec or no, or unreadable): the operator accepts that risk. Default false.
   */
  acceptLossyPersistence: boolean
  /** Audit events buffered in memory before new ones are dropped (and counted). */
  auditBufferSize: number
  /** Lifecycle events as signed webhooks (AUTH_WEBHOOK_URL and AUTH_WEBHOOK_SECRET); undefined: none sent. */
  webhooks: WebhookConfig | undefined
  /**
   * The internal listener (INTERNAL_HOST, INTERNAL_PORT; METRICS_PORT is its deprecated name):
   * /metrics, /docs, /openapi.json and /auth/revocations. The public port serves none of them
   * unless publicInternals asks for it, whatever NODE_ENV says.
   */
  internalHost: string
  internalPort: number
  /**
   * Host names the internal listener answers besides its bound address, localhost and the
   * loopback addresses (INTERNAL_HOSTNAMES, e.g. a compose service name); any other Host is a
   * 421 (DNS rebinding).
   */
  internalHostnames: string[]
  /**
   * The public port serves /metrics, /docs, /openapi.json and the revocation feed too
   * (AUTH_PUBLIC_INTERNALS=true; default false, whatever NODE_ENV says). The feed still needs
   * its key there unless the port is bound to the loopback only.
   */
  publicInternals: boolean
  /**
   * The one header /auth/verify reads the original URI from, when a proxy AUTH_TRUST_PROXY
   * trusts sends it (AUTH_ORIGINAL_URI_HEADER: x-forwarded-uri, the default, as Caddy, Traefik
   * and the shipped nginx file set it; or x-original-uri). The other is never believed.
   */
  originalUriHeader: OriginalUriHeader
  /** Bearer key a revocation-feed subscriber must send (AUTH_REVOCATIONS_KEY); undefined: see revocationsOpen. */
  revocationsKey: string | undefined
  /**
   * Bearer key of the admin API on the internal listener (AUTH_ADMIN_KEY, or the contents of
   * AUTH_ADMIN_KEY_FILE, trimmed); undefined: the admin API answers 404 (but see admin/local-access.ts).
   */
  adminKey: string | undefined
  /** Where the command line sends account commands (AUTH_ADMIN_URL: the internal listener's base URL). */
  adminUrl: string | undefined
  /** Revocation-feed subscribers at once, per instance; past it a new one is answered 503. */
  revocationsMaxSubscribers: number
  /** Settings given under a deprecated name, for the start-up log to warn about. */
  deprecated: string[]
  /** After SIGTERM: how long readiness answers 503 before the listener closes. */
  shutdownDelayMs: number
  /** After SIGTERM: the longest wait for in-flight requests before the process exits anyway. */
  shutdownTimeoutMs: number
  healthTimeoutMs: number
  /** Postgres pool: connections, and the timeouts of connecting, of one query, and of an idle connection. */
  databasePool: { max: number, connectTimeoutMs: number, queryTimeoutMs: number, idleTimeoutMs: number }
  /** The directory federated accounts log in through; undefined: federation off. */
  ldap: LdapConfig | undefined
  /** A directory user with no local account gets one (federated) at the first successful login. */
  ldapAutoProvision: boolean
  /** Fewest characters of a password this service sets (AUTH_PASSWORD_MIN_LENGTH; NIST SP 800-63B). */
  passwordMinLength: number
  /** Origins besides the service's own whose browser requests may log in and out (AUTH_ALLOWED_ORIGINS). */
  allowedOrigins: string[]
  /** Who may call POST /auth/introspect (HTTP Basic); empty: the endpoint is off (404). */
  introspectionClients: readonly IntrospectionClient[]
  /**
   * Hosts the sign-in page may send a person back to besides its own origin (AUTH_REDIRECT_ALLOWED):
   * `app.example.org` is that host, `.example.org` every subdomain of example.org.
   */
  redirectAllowed: readonly string[]
  /** The WebAuthn relying party id (AUTH_WEBAUTHN_RP_ID); undefined: the host the sign-in page was asked for. */
  webauthnRpId: string | undefined
  /** Origins a passkey ceremony may come from (AUTH_WEBAUTHN_ORIGINS); empty: the sign-in page's own origin. */
  webauthnOrigins: readonly string[]
  /**
   * The key TOTP secrets are sealed with (AUTH_TOTP_KEY, or AUTH_TOTP_KEY_FILE's contents: 32 bytes,
   * base64); undefined: a key file the service makes in dataDir at first use (totp/key-file.ts).
   */
  totpKey: Buffer | undefined
  /** Keys of before a rotation (AUTH_TOTP_PREVIOUS_KEYS, comma-separated): they open old secrets, which are then sealed again with totpKey. */
  totpPreviousKeys: Buffer[]
  /** The issuer authenticator apps show (AUTH_TOTP_ISSUER; default auth-token-service). */
  totpIssuer: string
  /** The name the sign-in and account pages show (AUTH_SIGNIN_TITLE); undefined: the host name the browser asked for. */
  signinTitle: string | undefined
  /**
   * A Login token not presented for this long stops working (AUTH_IDLE_TIMEOUT_SECONDS);
   * undefined: off, and Authenticate costs what it always did.
   */
  idleTimeoutSeconds: number | undefined
}

export const ORIGINAL_URI_HEADERS = ['x-forwarded-uri', 'x-original-uri'] as const
export type OriginalUriHeader = typeof ORIGINAL_URI_HEADERS[number]

/** One AUTH_INTROSPECTION_CLIENTS entry: a client id and its secret. */
export interface IntrospectionClient {
  id: string
  secret: string
}

export class ConfigError extends Error {
  readonly variable: string
  constructor (variable: string, problem: string) {
    super(`${variable}: ${problem}`)
    this.name = 'ConfigError'
    this.variable = variable
  }
}

export interface WebhookConfig {
  urls: string[]
  /** `whsec_<base64>`: the Standard Webhooks signing secret. */
  secret: string
  timeoutMs: number
  /** The first retry's delay; each next one doubles, up to an hour. */
  backoffMs: number
  /** How long an undelivered event is retried before it is marked failed (24 h at least). */
  retryWindowMs: number
  /** How often idle delivery loops look for due events. */
  pollMs: number
}

type Env = Readonly<Record<string, string | undefined>>

function present (env: Env, name: string): string | undefined {
  const value = env[name]
  return value === undefined || value.trim() === '' ? undefined : value.trim()
}

function integer (env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = present(env, name)
  if (raw === undefined) return fallback
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `expected a whole number, got "${raw}"`)
  const value = Number(raw)
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`)
  return value
}

function boolean (env: Env, name: string, fallback: boolean): boolean {
  const raw = present(env, name)
  if (raw === undefined) return fallback
  const lower = raw.toLowerCase()
  if (['true', '1', 'yes', 'on'].includes(lower)) return true
  if (['false', '0', 'no', 'off'].includes(lower)) return false
  throw new ConfigError(name, `expected true or false, got "${raw}"`)
}

function url (env: Env, name: string, protocols: readonly string[]): string | undefined {
  const raw = present(env, name)
  if (raw === undefined) return undefined
  let parsed: URL
  try {
    parsed = new URL(raw)
  } catch {
    throw new ConfigError(name, 'is not a valid URL')
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must start with ${protocols.map((p) => `${p}//`).join(' or ')}`)
  }
  return raw
}

/** Shortest client secret: introspection answers who holds any token, so a guessable secret would be a leak. */
export const MIN_CLIENT_SECRET_LENGTH = 16

/** AUTH_INTROSPECTION_CLIENTS: `id:secret,id:secret` (an id of URL-safe characters; a secret of 16 or more, no comma). */
function introspectionClients (env: Env): IntrospectionClient[] {
  const name = 'AUTH_INTROSPECTION_CLIENTS'
  const raw = present(env, name)
  if (raw === undefined) return []
  const clients: IntrospectionClient[] = []
  for (const entry of raw.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    const colon = entry.indexOf(':')
    const id = colon < 0 ? entry : entry.slice(0, colon)
    const secret = colon < 0 ? '' : entry.slice(colon + 1)
    // The id may be logged and named in errors; the secret never is.
    if (!/^[A-Za-z0-9._~-]{1,64}$/.test(id)) throw new ConfigError(name, 'expected id:secret pairs, the id 1-64 of A-Z a-z 0-9 . _ ~ -')
    if (secret.length < MIN_CLIENT_SECRET_LENGTH) throw new ConfigError(name, `the secret of client "${id}" is shorter than ${MIN_CLIENT_SECRET_LENGTH} characters`)
    if (clients.some((client) => client.id === id)) throw new ConfigError(name, `client "${id}" is given twice`)
    clients.push({ id, secret })
  }
  return clients
}

function trustProxy (env: Env): TrustProxy {
  const name = 'AUTH_TRUST_PROXY'
  const raw = present(env, name)
  if (raw === undefined) return false
  const lower = raw.toLowerCase()
  if (lower === 'true') return true
  if (lower === 'false') return false
  if (/^\d+$/.test(raw)) return Number(raw)
  const entries = raw.split(',').map((s) => s.trim()).filter((s) => s !== '')
  const shape = /^[0-9a-fA-F:.]+(\/\d{1,3})?$|^(loopback|linklocal|uniquelocal)$/
  for (const entry of entries) {
    if (!shape.test(entry)) throw new ConfigError(name, `expected true, false, a hop count or addresses/CIDRs, got "${entry}"`)
  }
  return entries
}

function hostPorts (env: Env, name: string): Array<{ host: string, port: number }> | undefined {
  const raw = present(env, name)
  if (raw === undefined) return undefined
  return raw.split(',').map((entry) => {
    const match = /^\s*(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})\s*$/.exec(entry)
    const port = Number(match?.[2])
    if (match?.[1] === undefined || port < 1 || port > 65535) throw new ConfigError(name, `expected host:port[,host:port...], got "${entry.trim()}"`)
    return { host: match[1].replace(/^\[|\]$/g, ''), port }
  })
}

function redisTopology (env: Env): RedisTopology | undefined {
  const url = redisUrl(env)
  const nodes = hostPorts(env, 'REDIS_CLUSTER_NODES')
  const sentinels = hostPorts(env, 'REDIS_SENTINELS')
  const given = [url === undefined ? [] : ['REDIS_URL'], nodes === undefined ? [] : ['REDIS_CLUSTER_NODES'], sentinels === undefined ? [] : ['REDIS_SENTINELS']].flat()
  if (given.length > 1) throw new ConfigError(given[1] ?? 'REDIS_URL', `set only one of ${given.join(', ')}`)
  if (url !== undefined) return { kind: 'single', url }
  if (nodes !== undefined) return { kind: 'cluster', nodes }
  if (sentinels !== undefined) return { kind: 'sentinel', sentinels, name: present(env, 'REDIS_SENTINEL_NAME') ?? 'mymaster' }
  return undefined
}

function ldapConfig (env: Env): LdapConfig | undefined {
  const url = present(env, 'AUTH_LDAP_URL')
  const others = ['AUTH_LDAP_BIND_DN', 'AUTH_LDAP_SEARCH_BASE', 'AUTH_LDAP_SEARCH_FILTER', 'AUTH_LDAP_BIND_PASSWORD'].filter((name) => present(env, name) !== undefined)
  if (url === undefined) {
    if (others.length > 0) throw new ConfigError(others[0] ?? 'AUTH_LDAP_URL', 'needs AUTH_LDAP_URL')
    return undefined
  }
  if (!/^ldaps?:\/\/[^\s/]+\/?$/.test(url)) throw new ConfigError('AUTH_LDAP_URL', 'expected ldap://host[:port] or ldaps://host[:port]')
  const usernameAttribute = present(env, 'AUTH_LDAP_USERNAME_ATTRIBUTE') ?? 'uid'
  if (!/^[A-Za-z][A-Za-z0-9-]{0,63}$/.test(usernameAttribute)) throw new ConfigError('AUTH_LDAP_USERNAME_ATTRIBUTE', `expected an attribute name such as uid, got "${usernameAttribute}"`)
  const common = {
    url,
    usernameAttribute,
    timeoutMs: integer(env, 'AUTH_LDAP_TIMEOUT_MS', 5000, 100, 60_000),
    tls: {
      caFile: present(env, 'AUTH_LDAP_TLS_CA_FILE'),
      rejectUnauthorized: boolean(env, 'AUTH_LDAP_TLS_REJECT_UNAUTHORIZED', true),
      startTls: boolean(env, 'AUTH_LDAP_STARTTLS', false)
    }
  }
  const bindDn = present(env, 'AUTH_LDAP_BIND_DN')
  const searchBase = present(env, 'AUTH_LDAP_SEARCH_BASE')
  if (bindDn === undefined) throw new ConfigError('AUTH_LDAP_BIND_DN', 'is required with AUTH_LDAP_URL: a DN template with {username}, or a service account with AUTH_LDAP_SEARCH_BASE')
  if (searchBase === undefined) {
    if (!bindDn.includes('{username}')) throw new ConfigError('AUTH_LDAP_BIND_DN', 'without AUTH_LDAP_SEARCH_BASE it is a template and must hold {username}')
    return { ...common, mode: 'template', userDnTemplate: bindDn }
  }
  const bindPassword = env.AUTH_LDAP_BIND_PASSWORD
  if (bindPassword === undefined || bindPassword === '') throw new ConfigError('AUTH_LDAP_BIND_PASSWORD', 'is required for the search mode (AUTH_LDAP_SEARCH_BASE)')
  const searchFilter = present(env, 'AUTH_LDAP_SEARCH_FILTER') ?? '(uid={username})'
  if (!searchFilter.includes('{username}') || !searchFilter.startsWith('(') || !searchFilter.endsWith(')')) {
    throw new ConfigError('AUTH_LDAP_SEARCH_FILTER', 'must be a parenthesized filter holding {username}, e.g. (uid={username})')
  }
  return { ...common, mode: 'search', bindDn, bindPassword, searchBase, searchFilter }
}

/** AUTH_ALLOWED_ORIGINS: origins as a browser sends them in `Origin` (scheme://host[:port], no path). */
function origins (env: Env, name: string): string[] {
  const raw = present(env, name)
  if (raw === undefined) return []
  return raw.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '').map((entry) => {
    let origin: string | undefined
    try {
      origin = new URL(entry).origin
    } catch {}
    if (origin === undefined || origin === 'null' || origin !== entry) {
      throw new ConfigError(name, `expected origins such as https://app.example.org (scheme, host, port; no path or trailing slash), got "${entry}"`)
    }
    return origin
  })
}

/** AUTH_REDIRECT_ALLOWED: host names, a leading dot for every subdomain (`.example.org`); no scheme, port or path. */
function redirectHosts (env: Env): string[] {
  const raw = present(env, 'AUTH_REDIRECT_ALLOWED')
  if (raw === undefined) return []
  return raw.split(',').map((entry) => entry.trim().toLowerCase()).filter((entry) => entry !== '').map((entry) => {
    if (!/^\.?[a-z0-9-]+(\.[a-z0-9-]+)*$/.test(entry)) {
      throw new ConfigError('AUTH_REDIRECT_ALLOWED', `expected host names such as app.example.org or .example.org (no scheme, port or path), got "${entry}"`)
    }
    return entry
  })
}

/** INTERNAL_HOSTNAMES: host names (or address literals) as a client sends them in Host, without a port. */
function hostnames (env: Env, name: string): string[] {
  const raw = present(env, name)
  if (raw === undefined) return []
  return raw.split(',').map((entry) => entry.trim().toLowerCase()).filter((entry) => entry !== '').map((entry) => {
    const bare = entry.startsWith('[') && entry.endsWith(']') ? entry.slice(1, -1) : entry
    if (!/^[a-z0-9.-]+$/.test(bare) && isIP(bare) !== 6) {
      throw new ConfigError(name, `expected host names such as auth-internal or auth.internal.example (no scheme, no port), got "${entry}"`)
    }
    return bare
  })
}

function originalUriHeader (env: Env): OriginalUriHeader {
  const raw = present(env, 'AUTH_ORIGINAL_URI_HEADER')?.toLowerCase() ?? 'x-forwarded-uri'
  const header = ORIGINAL_URI_HEADERS.find((name) => name === raw)
  if (header === undefined) throw new ConfigError('AUTH_ORIGINAL_URI_HEADER', `expected X-Forwarded-Uri or X-Original-URI, got "${raw}"`)
  return header
}

/** The revocation feed's subscriber key: long enough that guessing it is hopeless. */
function revocationsKey (env: Env): string | undefined {
  const key = present(env, 'AUTH_REVOCATIONS_KEY')
  if (key !== undefined && key.length < 32) throw new ConfigError('AUTH_REVOCATIONS_KEY', `must be at least 32 characters (openssl rand -base64 32), got ${key.length}`)
  return key
}

/** Shortest admin key: it manages every account, so it must be as unguessable as the revocation feed's. */
export const MIN_ADMIN_KEY_LENGTH = 32

/** AUTH_ADMIN_KEY or AUTH_ADMIN_KEY_FILE (a secret mounted as a file, e.g. a Docker or Kubernetes secret), not both. */
function adminKey (env: Env): string | undefined {
  const direct = present(env, 'AUTH_ADMIN_KEY')
  const file = present(env, 'AUTH_ADMIN_KEY_FILE')
  if (direct !== undefined && file !== undefined) throw new ConfigError('AUTH_ADMIN_KEY_FILE', 'is set together with AUTH_ADMIN_KEY: set one of them')
  let key = direct
  let name = 'AUTH_ADMIN_KEY'
  if (file !== undefined) {
    name = 'AUTH_ADMIN_KEY_FILE'
    try {
      key = readFileSync(file, 'utf8').trim()
    } catch (error) {
      const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : 'unreadable'
      throw new ConfigError(name, `cannot be read: ${file} (${code})`)
    }
    if (key === '') throw new ConfigError(name, `${file} is empty`)
  }
  if (key !== undefined && key.length < MIN_ADMIN_KEY_LENGTH) {
    throw new ConfigError(name, `the key must be at least ${MIN_ADMIN_KEY_LENGTH} characters (openssl rand -base64 32), got ${key.length}`)
  }
  return key
}

/** Base64 of exactly 32 bytes, or the ConfigError naming `name`. */
function totpKeyValue (name: string, raw: string): Buffer {
  const trimmed = raw.trim()
  const key = /^[A-Za-z0-9+/]+={0,2}$/.test(trimmed) ? Buffer.from(trimmed, 'base64') : Buffer.alloc(0)
  // The value is a secret: the message says what is wrong, never what was given.
  if (key.length !== 32) throw new ConfigError(name, 'expected 32 bytes in base64 (openssl rand -base64 32)')
  return key
}

/** AUTH_TOTP_KEY or AUTH_TOTP_KEY_FILE, not both; neither: undefined (a key file in the data directory). */
function totpKey (env: Env): Buffer | undefined {
  const direct = present(env, 'AUTH_TOTP_KEY')
  const file = present(env, 'AUTH_TOTP_KEY_FILE')
  if (direct !== undefined && file !== undefined) throw new ConfigError('AUTH_TOTP_KEY_FILE', 'is set together with AUTH_TOTP_KEY: set one of them')
  if (direct !== undefined) return totpKeyValue('AUTH_TOTP_KEY', direct)
  if (file === undefined) return undefined
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : 'unreadable'
    throw new ConfigError('AUTH_TOTP_KEY_FILE', `cannot be read: ${file} (${code})`)
  }
  return totpKeyValue('AUTH_TOTP_KEY_FILE', text)
}

function totpPreviousKeys (env: Env): Buffer[] {
  const raw = present(env, 'AUTH_TOTP_PREVIOUS_KEYS')
  if (raw === undefined) return []
  return raw.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '').map((entry) => totpKeyValue('AUTH_TOTP_PREVIOUS_KEYS', entry))
}

const redisUrl = (env: Env): string | undefined => url(env, 'REDIS_URL', ['redis:', 'rediss:'])
/** 'auto' (unset): the replicas each master is meant to have, as the cluster or the sentinels list them. */
const minReplicaAcks = (env: Env): MinReplicaAcks =>
  (present(env, 'AUTH_REDIS_MIN_REPLICA_ACKS') ?? 'auto').toLowerCase() === 'auto' ? 'auto' : integer(env, 'AUTH_REDIS_MIN_REPLICA_ACKS', 0, 0, 16)

const DAY = 24 * 60 * 60

/** argon2id operations at once by default: one per core but one, at least one, at most three. */
export function defaultHashConcurrency (cores: number): number {
  return Math.max(1, Math.min(cores - 1, 3))
}

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]'])

/** The two listeners would ask for one address: same port (not 0, "any free one") and overlapping hosts. */
function sharesPort (config: Config): boolean {
  if (config.port === 0 || config.port !== config.internalPort) return false
  return config.host === config.internalHost || WILDCARD_HOSTS.has(config.host) || WILDCARD_HOSTS.has(config.internalHost)
}

/** AUTH_WEBHOOK_URL (comma-separated http(s) URLs) with AUTH_WEBHOOK_SECRET, or neither. */
function webhookConfig (env: Env): WebhookConfig | undefined {
  const raw = present(env, 'AUTH_WEBHOOK_URL')
  const secret = present(env, 'AUTH_WEBHOOK_SECRET')
  if (raw === undefined) {
    if (secret !== undefined) throw new ConfigError('AUTH_WEBHOOK_SECRET', 'is set but AUTH_WEBHOOK_URL is not: set both, or neither')
    return undefined
  }
  const urls = raw.split(',').map((part) => part.trim()).filter((part) => part !== '')
  for (const candidate of urls) url({ AUTH_WEBHOOK_URL: candidate }, 'AUTH_WEBHOOK_URL', ['http:', 'https:'])
  if (new Set(urls).size !== urls.length) throw new ConfigError('AUTH_WEBHOOK_URL', 'names one URL twice')
  if (secret === undefined) throw new ConfigError('AUTH_WEBHOOK_SECRET', 'is required with AUTH_WEBHOOK_URL (whsec_ and base64: echo whsec_$(openssl rand -base64 32))')
  const decoded = decodeWebhookSecret(secret)
  if (!decoded.ok) throw new ConfigError('AUTH_WEBHOOK_SECRET', decoded.problem)
  return {
    urls,
    secret,
    timeoutMs: integer(env, 'AUTH_WEBHOOK_TIMEOUT_SECONDS', 10, 1, 300) * 1000,
    backoffMs: integer(env, 'AUTH_WEBHOOK_BACKOFF_SECONDS', 5, 1, 3600) * 1000,
    retryWindowMs: integer(env, 'AUTH_WEBHOOK_RETRY_HOURS', 24, 24, 24 * 30) * 3_600_000,
    pollMs: 1000
  }
}

export function loadConfig (env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const nodeEnv = present(env, 'NODE_ENV') ?? 'development'
  const bootstrapUsername = present(env, 'AUTH_BOOTSTRAP_USERNAME')
  // The password is taken as given (spaces are characters of a password).
  const bootstrapPassword = env.AUTH_BOOTSTRAP_PASSWORD === '' ? undefined : env.AUTH_BOOTSTRAP_PASSWORD
  if ((bootstrapUsername === undefined) !== (bootstrapPassword === undefined)) {
    throw new ConfigError(bootstrapUsername === undefined ? 'AUTH_BOOTSTRAP_USERNAME' : 'AUTH_BOOTSTRAP_PASSWORD',
      'AUTH_BOOTSTRAP_USERNAME and AUTH_BOOTSTRAP_PASSWORD must be set together')
  }
  const bootstrapReset = boolean(env, 'AUTH_BOOTSTRAP_RESET', false)
  if (bootstrapReset && bootstrapUsername === undefined) {
    throw new ConfigError('AUTH_BOOTSTRAP_RESET', 'resets the bootstrap account: it needs AUTH_BOOTSTRAP_USERNAME and AUTH_BOOTSTRAP_PASSWORD')
  }
  const lockoutSeconds = integer(env, 'AUTH_LOCKOUT_SECONDS', 60, 1, DAY)
  const maxLockoutSeconds = integer(env, 'AUTH_MAX_LOCKOUT_SECONDS', 900, 1, 30 * DAY)
  if (maxLockoutSeconds < lockoutSeconds) {
    throw new ConfigError('AUTH_MAX_LOCKOUT_SECONDS', `must be at least AUTH_LOCKOUT_SECONDS (${lockoutSeconds})`)
  }
  const logLevel = present(env, 'LOG_LEVEL') ?? 'info'
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `expected one of fatal, error, warn, info, debug, trace, silent, got "${logLevel}"`)
  }
  const config: Config = {
    host: present(env, 'HOST') ?? '0.0.0.0',
    port: integer(env, 'PORT', 3000, 0, 65535),
    nodeEnv,
    logLevel,
    logBufferBytes: integer(env, 'LOG_BUFFER_BYTES', DEFAULT_LOG_BUFFER_BYTES, LOG_FLUSH_BYTES, 1024 * 1024 * 1024),
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    redis: redisTopology(env),
    dataDir: present(env, 'AUTH_DATA_DIR') ?? './data',
    // One hash tag for every key: each script's keys share a slot in a Redis Cluster.
    redisKeyPrefix: present(env, 'AUTH_REDIS_KEY_PREFIX') ?? DEFAULT_KEY_PREFIX,
    tokenTtlSeconds: integer(env, 'AUTH_TOKEN_TTL_SECONDS', 43200, 1, 365 * DAY),
    federatedTokenTtlSeconds: integer(env, 'AUTH_FEDERATED_TOKEN_TTL_SECONDS', 86400, 1, 365 * DAY),
    denyTtlSeconds: integer(env, 'AUTH_DENY_TTL_SECONDS', 300, 1, DAY),
    apiKeyMaxDays: integer(env, 'AUTH_API_KEY_MAX_DAYS', 365, 1, 3650),
    // Bounds what a revoke-all or disable must end in one step, and what one account may own.
    apiKeysPerAccount: integer(env, 'AUTH_API_KEYS_PER_ACCOUNT', 50, 1, 10_000),
    // Secure whatever NODE_ENV says: browsers and curl keep a Secure cookie from
    // http://localhost too; plain http on another host opts out with AUTH_COOKIE_SECURE=false.
    cookieSecure: boolean(env, 'AUTH_COOKIE_SECURE', true),
    cookieDomain: present(env, 'AUTH_COOKIE_DOMAIN'),
    bootstrapUsername,
    bootstrapPassword,
    bootstrapReset,
    legacyPathLogin: boolean(env, 'AUTH_LEGACY_PATH_LOGIN', true),
    maxFailedLogins: integer(env, 'AUTH_MAX_FAILED_LOGINS', 10, 1, 100),
    lockoutSeconds,
    maxLockoutSeconds,
    maxFailedLoginsPerIp: integer(env, 'AUTH_MAX_FAILED_LOGINS_PER_IP', 100, 1, 1_000_000),
    ipWindowSeconds: integer(env, 'AUTH_IP_WINDOW_SECONDS', 900, 1, DAY),
    // 30 a minute: a person signing in makes a few; a script, thousands (one stored challenge each).
    preSignInRequestsPerIp: integer(env, 'AUTH_PRESIGNIN_REQUESTS_PER_IP', 30, 1, 1_000_000),
    preSignInWindowSeconds: integer(env, 'AUTH_PRESIGNIN_WINDOW_SECONDS', 60, 1, DAY),
    trustProxy: trustProxy(env),
    bodyLimitBytes: integer(env, 'AUTH_BODY_LIMIT_BYTES', 16 * 1024, 1024, 1024 * 1024),
    requestTimeoutMs: integer(env, 'AUTH_REQUEST_TIMEOUT_MS', 10_000, 1000, 600_000),
    redisCommandTimeoutMs: integer(env, 'AUTH_REDIS_COMMAND_TIMEOUT_MS', 500, 10, 60_000),
    redisMinReplicaAcks: minReplicaAcks(env),
    argon2: {
      memoryCost: integer(env, 'AUTH_ARGON2_MEMORY_KIB', 19456, 19456, 4 * 1024 * 1024),
      timeCost: integer(env, 'AUTH_ARGON2_TIME_COST', 2, 2, 100),
      parallelism: integer(env, 'AUTH_ARGON2_PARALLELISM', 1, 1, 16)
    },
    hashing: {
      // One core left to the event loop (Authenticate's), and never all four of libuv's default
      // threads: with every core hashing, a login storm tripled Authenticate's p99 (bench/README.md).
      concurrency: integer(env, 'AUTH_HASH_CONCURRENCY', defaultHashConcurrency(availableParallelism()), 1, 64),
      maxQueued: integer(env, 'AUTH_HASH_QUEUE_MAX', 64, 0, 100_000),
      // Fair shares: no one account or client IP holds more of the slots and the queue.
      perAccount: {
        running: integer(env, 'AUTH_HASH_ACCOUNT_RUNNING', 2, 1, 64),
        queued: integer(env, 'AUTH_HASH_ACCOUNT_QUEUED', 8, 0, 100_000)
      },
      perIp: {
        running: integer(env, 'AUTH_HASH_IP_RUNNING', 4, 1, 64),
        queued: integer(env, 'AUTH_HASH_IP_QUEUED', 16, 0, 100_000)
      }
    },
    maxTokensPerAccount: integer(env, 'AUTH_MAX_TOKENS_PER_ACCOUNT', 1000, 1, 1_000_000),
    acceptLossyPersistence: boolean(env, 'AUTH_REDIS_ACCEPT_LOSSY_PERSISTENCE', false),
    auditBufferSize: integer(env, 'AUTH_AUDIT_BUFFER', 10_000, 1, 1_000_000),
    webhooks: webhookConfig(env),
    internalHost: present(env, 'INTERNAL_HOST') ?? '127.0.0.1',
    internalPort: integer(env, 'INTERNAL_PORT', present(env, 'METRICS_PORT') === undefined ? 3001 : integer(env, 'METRICS_PORT', 3001, 0, 65535), 0, 65535),
    internalHostnames: hostnames(env, 'INTERNAL_HOSTNAMES'),
    publicInternals: boolean(env, 'AUTH_PUBLIC_INTERNALS', false),
    originalUriHeader: originalUriHeader(env),
    revocationsKey: revocationsKey(env),
    adminKey: adminKey(env),
    adminUrl: url(env, 'AUTH_ADMIN_URL', ['http:', 'https:']),
    revocationsMaxSubscribers: integer(env, 'AUTH_REVOCATIONS_MAX_SUBSCRIBERS', 64, 1, 100_000),
    deprecated: present(env, 'METRICS_PORT') === undefined ? [] : ['METRICS_PORT is now INTERNAL_PORT (it carries /metrics, /docs, /openapi.json and /auth/revocations): rename it'],
    shutdownDelayMs: integer(env, 'SHUTDOWN_DELAY_MS', 0, 0, 600_000),
    shutdownTimeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 100, 600_000),
    healthTimeoutMs: integer(env, 'HEALTH_TIMEOUT_MS', 1000, 10, 60_000),
    databasePool: {
      max: integer(env, 'DATABASE_POOL_MAX', 10, 1, 1000),
      connectTimeoutMs: integer(env, 'DATABASE_CONNECT_TIMEOUT_MS', 2000, 100, 60_000),
      queryTimeoutMs: integer(env, 'DATABASE_QUERY_TIMEOUT_MS', 5000, 100, 600_000),
      idleTimeoutMs: integer(env, 'DATABASE_IDLE_TIMEOUT_MS', 30_000, 1000, 3_600_000)
    },
    ldap: ldapConfig(env),
    ldapAutoProvision: boolean(env, 'AUTH_LDAP_AUTO_PROVISION', false),
    allowedOrigins: origins(env, 'AUTH_ALLOWED_ORIGINS'),
    // NIST SP 800-63B: at least 8; 64 is the most a policy may ask (verifiers must take at least 64).
    passwordMinLength: integer(env, 'AUTH_PASSWORD_MIN_LENGTH', 8, 8, 64),
    introspectionClients: introspectionClients(env),
    redirectAllowed: redirectHosts(env),
    webauthnRpId: present(env, 'AUTH_WEBAUTHN_RP_ID')?.toLowerCase(),
    webauthnOrigins: origins(env, 'AUTH_WEBAUTHN_ORIGINS'),
    totpKey: totpKey(env),
    totpPreviousKeys: totpPreviousKeys(env),
    totpIssuer: present(env, 'AUTH_TOTP_ISSUER') ?? 'auth-token-service',
    signinTitle: present(env, 'AUTH_SIGNIN_TITLE'),
    idleTimeoutSeconds: present(env, 'AUTH_IDLE_TIMEOUT_SECONDS') === undefined ? undefined : integer(env, 'AUTH_IDLE_TIMEOUT_SECONDS', 0, 1, 365 * DAY),
    ...overrides
  }
  if (config.shutdownDelayMs >= config.shutdownTimeoutMs) {
    throw new ConfigError('SHUTDOWN_DELAY_MS', `must be shorter than SHUTDOWN_TIMEOUT_MS (${config.shutdownTimeoutMs}), or every shutdown ends killed`)
  }
  if (sharesPort(config)) {
    throw new ConfigError('INTERNAL_PORT', `is ${config.internalPort}, the same as PORT: the internal listener (/metrics, /docs, /admin) needs a port of its own`)
  }
  if (config.redis?.kind === 'cluster' && !/\{[^{}]+\}/.test(config.redisKeyPrefix)) {
    throw new ConfigError('AUTH_REDIS_KEY_PREFIX', 'must hold a hash tag such as {ats} with REDIS_CLUSTER_NODES, so that each script\'s keys share a slot')
  }
  if (config.cookieDomain !== undefined && !/^[A-Za-z0-9.-]+$/.test(config.cookieDomain)) {
    throw new ConfigError('AUTH_COOKIE_DOMAIN', `is not a domain name: "${config.cookieDomain}"`)
  }
  if (config.webauthnRpId !== undefined && !/^[a-z0-9-]+(\.[a-z0-9-]+)*$/.test(config.webauthnRpId)) {
    throw new ConfigError('AUTH_WEBAUTHN_RP_ID', `is not a domain name: "${config.webauthnRpId}"`)
  }
  return config
}
