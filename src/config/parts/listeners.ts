import { isIP } from 'node:net'
import { Type } from 'typebox'
import { ConfigError } from '../config-error.js'
import { keywords, refusal, variables, type Env } from '../variables.js'

/** The two listeners, what a request may take of them, and how the process stops (src/app). */
export const ListenersSchema = Type.Object({
  HOST: Type.String({ default: '0.0.0.0', description: 'the public listener\'s address' }),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000, description: 'the public listener\'s port (`0`: any free port)' }),
  INTERNAL_HOST: Type.String({ default: '127.0.0.1', description: 'the internal listener\'s address: `/metrics`, `/docs` (and the operations it describes, for its "Try it out"), `/openapi.json`, `/auth/revocations` and the admin API, only there unless `AUTH_PUBLIC_INTERNALS` (see [Security](security.md#internal-surfaces))' }),
  INTERNAL_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3001, description: 'the internal listener\'s port (`0`: any free port); a port of its own unless the two hosts cannot meet' }),
  METRICS_PORT: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535, description: 'the old name of `INTERNAL_PORT`: still sets the port when `INTERNAL_PORT` is unset, with a warning at start' })),
  INTERNAL_HOSTNAMES: Type.Array(Type.String({ caseInsensitive: true, expected: 'host names such as auth-internal or auth.internal.example (no scheme, no port)' }), { default: [], description: 'host names the internal listener answers besides its bound address, `localhost`, `127.0.0.1` and `[::1]` (`auth-internal,auth.svc.example`); any other `Host` gets 421 (DNS rebinding)' }),
  AUTH_PUBLIC_INTERNALS: Type.Boolean({ default: false, description: '`true`: the public port serves `/metrics`, `/docs`, `/openapi.json` and `/auth/revocations` too (a development machine; never where the port is published), whatever `NODE_ENV` says' }),
  AUTH_BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, maximum: 1024 * 1024, default: 16 * 1024, description: 'largest request body' }),
  AUTH_REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 1000, maximum: 600_000, default: 10_000, description: 'longest time to receive a whole request' }),
  HEALTH_TIMEOUT_MS: Type.Integer({ minimum: 10, maximum: 60_000, default: 1000, description: 'how long `/health/ready` waits for Redis and for Postgres' }),
  SHUTDOWN_DELAY_MS: Type.Integer({ minimum: 0, maximum: 600_000, default: 0, description: 'after SIGTERM/SIGINT, how long readiness answers 503 before the listener closes; shorter than `SHUTDOWN_TIMEOUT_MS`' }),
  SHUTDOWN_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 600_000, default: 10_000, description: 'the longest a shutdown may take from the signal, the delay included; past it the process exits 1' })
}, { $id: 'listeners', title: 'Listeners', description: 'The public listener, the internal one (operations and administration, on the loopback by default), and how the process stops.' })

export interface ListenerSettings {
  host: string
  port: number
  /**
   * The internal listener: /metrics, /docs, /openapi.json, /auth/revocations and the admin API.
   * The public port serves none of them unless publicInternals asks for it.
   */
  internalHost: string
  internalPort: number
  /** Host names the internal listener answers besides its bound address and the loopback ones; any other Host is a 421. */
  internalHostnames: string[]
  publicInternals: boolean
  bodyLimitBytes: number
  requestTimeoutMs: number
  healthTimeoutMs: number
  /** After SIGTERM: how long readiness answers 503 before the listener closes. */
  shutdownDelayMs: number
  /** After SIGTERM: the longest wait for in-flight requests before the process exits anyway. */
  shutdownTimeoutMs: number
  /** Settings given under a deprecated name, for the start-up log to warn about. */
  deprecated: string[]
}

/** INTERNAL_HOSTNAMES as a client sends them in Host, without a port: names, or an IPv6 literal in brackets or not. */
function hostname (entry: string): string {
  const bare = entry.startsWith('[') && entry.endsWith(']') ? entry.slice(1, -1) : entry
  if (!/^[a-z0-9.-]+$/.test(bare) && isIP(bare) !== 6) throw refusal('INTERNAL_HOSTNAMES', keywords(ListenersSchema.properties.INTERNAL_HOSTNAMES.items), entry)
  return bare
}

export function readListeners (env: Env): ListenerSettings {
  const vars = variables(ListenersSchema, env)
  const metricsPort = vars.read('METRICS_PORT')
  return {
    host: vars.read('HOST'),
    port: vars.read('PORT'),
    internalHost: vars.read('INTERNAL_HOST'),
    internalPort: vars.given('INTERNAL_PORT') || metricsPort === undefined ? vars.read('INTERNAL_PORT') : metricsPort,
    internalHostnames: vars.read('INTERNAL_HOSTNAMES').map(hostname),
    publicInternals: vars.read('AUTH_PUBLIC_INTERNALS'),
    bodyLimitBytes: vars.read('AUTH_BODY_LIMIT_BYTES'),
    requestTimeoutMs: vars.read('AUTH_REQUEST_TIMEOUT_MS'),
    healthTimeoutMs: vars.read('HEALTH_TIMEOUT_MS'),
    shutdownDelayMs: vars.read('SHUTDOWN_DELAY_MS'),
    shutdownTimeoutMs: vars.read('SHUTDOWN_TIMEOUT_MS'),
    deprecated: metricsPort === undefined ? [] : ['METRICS_PORT is now INTERNAL_PORT (it carries /metrics, /docs, /openapi.json and /auth/revocations): rename it']
  }
}

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]'])

/** The two listeners would ask for one address: same port (not 0, "any free one") and overlapping hosts. */
function sharesPort (settings: ListenerSettings): boolean {
  if (settings.port === 0 || settings.port !== settings.internalPort) return false
  return settings.host === settings.internalHost || WILDCARD_HOSTS.has(settings.host) || WILDCARD_HOSTS.has(settings.internalHost)
}

/** Across variables, on the settings as the service will use them (a caller's overrides included). */
export function checkListeners (settings: ListenerSettings): void {
  if (settings.shutdownDelayMs >= settings.shutdownTimeoutMs) {
    throw new ConfigError('SHUTDOWN_DELAY_MS', `must be shorter than SHUTDOWN_TIMEOUT_MS (${settings.shutdownTimeoutMs}), or every shutdown ends killed`)
  }
  if (sharesPort(settings)) {
    throw new ConfigError('INTERNAL_PORT', `is ${settings.internalPort}, the same as PORT: the internal listener (/metrics, /docs, /admin) needs a port of its own`)
  }
}
