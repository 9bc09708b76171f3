import { Type } from 'typebox'
import { ConfigError } from '../config-error.js'
import { variables, type Env } from '../variables.js'

/** The OpenID Connect provider (src/oidc): where it is, and how long what it hands out lives. */
export const OidcSchema = Type.Object({
  AUTH_OIDC_ISSUER: Type.Optional(Type.String({
    format: 'uri',
    protocols: ['http:', 'https:'],
    docDefault: 'unset: off (every OpenID route 404)',
    description: 'the provider\'s public URL with its path, e.g. `https://auth.example.org/oidc`: served at that path on the public port; `<issuer>/.well-known/openid-configuration` lists every endpoint ([single sign-on](single-sign-on.md))'
  })),
  AUTH_OIDC_ACCESS_TOKEN_TTL_SECONDS: Type.Integer({ minimum: 60, maximum: 86_400, default: 3600, description: 'an access token\'s life (it ends sooner with the sign-in session it came from)' }),
  AUTH_OIDC_REFRESH_TOKEN_TTL_SECONDS: Type.Integer({ minimum: 300, maximum: 30 * 86_400, default: 14 * 86_400, description: 'a refresh token\'s longest life (it ends sooner with the sign-in session it came from)' }),
  AUTH_OIDC_ID_TOKEN_TTL_SECONDS: Type.Integer({ minimum: 60, maximum: 86_400, default: 3600, description: 'an ID token\'s life; a retired signing key stays in the JWKS at least this long' })
}, { $id: 'oidc', title: 'Single sign-on (OpenID Connect)', description: 'The OpenID Connect provider web apps sign people in with ([single sign-on](single-sign-on.md)).' })

export interface OidcConfig {
  /** The issuer URL exactly as configured, without a trailing slash. */
  issuer: string
  /** The issuer's path on the public port (`/oidc`); never `/` or a path of the service's own routes. */
  path: string
  accessTokenTtlSeconds: number
  refreshTokenTtlSeconds: number
  idTokenTtlSeconds: number
  /**
   * The waits before each new try of a back-channel logout token a client's URI refused (not a
   * setting: tests shorten it). Five tries over about three minutes, then an error in the log.
   */
  backchannelRetryDelaysMs: readonly number[]
}

/** Back-channel logout's retries: 1 s, 5 s, 30 s, 2 min. */
export const BACKCHANNEL_RETRY_DELAYS_MS: readonly number[] = [1000, 5000, 30_000, 120_000]

export interface OidcSettings {
  /** The provider; undefined: off. */
  oidc: OidcConfig | undefined
}

/** Paths the service answers itself: the provider cannot be mounted at or below them. */
const TAKEN = ['/auth', '/admin', '/docs', '/health', '/metrics', '/favicon.ico']

export function readOidc (env: Env): OidcSettings {
  const vars = variables(OidcSchema, env)
  // Every value checked, the provider on or off: a wrong lifetime is found before the day it is turned on.
  const lifetimes = {
    accessTokenTtlSeconds: vars.read('AUTH_OIDC_ACCESS_TOKEN_TTL_SECONDS'),
    refreshTokenTtlSeconds: vars.read('AUTH_OIDC_REFRESH_TOKEN_TTL_SECONDS'),
    idTokenTtlSeconds: vars.read('AUTH_OIDC_ID_TOKEN_TTL_SECONDS')
  }
  const issuer = vars.read('AUTH_OIDC_ISSUER')
  if (issuer === undefined) return { oidc: undefined }
  const url = new URL(issuer)
  if (url.search !== '' || url.hash !== '') throw new ConfigError('AUTH_OIDC_ISSUER', 'must have no query or fragment (OpenID Connect Discovery §2)')
  const path = url.pathname.replace(/\/+$/, '')
  if (path === '') throw new ConfigError('AUTH_OIDC_ISSUER', 'needs a path of its own, e.g. https://auth.example.org/oidc (the root is the service\'s)')
  if (TAKEN.some((taken) => path === taken || path.startsWith(`${taken}/`))) throw new ConfigError('AUTH_OIDC_ISSUER', `its path ${path} is one of the service's own`)
  return {
    oidc: {
      issuer: issuer.replace(/\/+$/, ''),
      path,
      ...lifetimes,
      backchannelRetryDelaysMs: BACKCHANNEL_RETRY_DELAYS_MS
    }
  }
}
