import { Type } from 'typebox'
import { checkText, keywords, refusal, variables, type Env, type Keywords } from '../variables.js'

export const ORIGINAL_URI_HEADERS = ['x-forwarded-uri', 'x-original-uri'] as const
export type OriginalUriHeader = typeof ORIGINAL_URI_HEADERS[number]
export type TrustProxy = boolean | number | string[]

/** One entry of a list of origins (AUTH_ALLOWED_ORIGINS, AUTH_WEBAUTHN_ORIGINS). */
export const OriginSchema = Type.String({ expected: 'origins such as https://app.example.org (scheme, host, port; no path or trailing slash)' })

/** What the HTTP edge believes of proxies, the cookie it sets, and which pages may post to it (src/http). */
export const HttpSchema = Type.Object({
  AUTH_TRUST_PROXY: Type.String({ default: 'false', expected: 'true, false, a hop count or addresses/CIDRs', description: 'whose `X-Forwarded-For` to believe: `true`, a hop count, or addresses/CIDRs (`loopback`, `linklocal`, `uniquelocal` too); also whose original-URI header `/auth/verify` believes' }),
  AUTH_ORIGINAL_URI_HEADER: Type.Enum(ORIGINAL_URI_HEADERS, { default: 'x-forwarded-uri', caseInsensitive: true, expected: 'X-Forwarded-Uri or X-Original-URI', description: 'the one header `/auth/verify` reads the original URI from (from a proxy `AUTH_TRUST_PROXY` trusts): `X-Forwarded-Uri` (Caddy, Traefik, the shipped nginx file) or `X-Original-URI`; the other is never believed' }),
  AUTH_COOKIE_SECURE: Type.Boolean({ default: true, description: '`Secure` on the cookie whatever `NODE_ENV` says (browsers and curl keep it from `http://localhost` too); `false` only for plain http on another host' }),
  AUTH_COOKIE_DOMAIN: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9.-]+$', expected: 'a domain name such as example.org', description: '`Domain` on the cookie: `example.org` makes one sign-in good for every app of the domain behind the gateway ([Browser sign-in](browser-sign-in.md#one-sign-in-for-several-apps))' })),
  AUTH_ALLOWED_ORIGINS: Type.Array(OriginSchema, { default: [], description: 'origins (`https://app.example.org,…`) besides the service\'s own whose browser pages may log in and out ([Security](security.md#login-csrf))' })
}, { $id: 'http', title: 'Proxies, cookies and origins', description: 'What the HTTP edge believes of the proxies in front of it, the cookie it sets, and which other pages may post to it.' })

export interface HttpSettings {
  trustProxy: TrustProxy
  /** The one header /auth/verify reads the original URI from, when a proxy AUTH_TRUST_PROXY trusts sends it; the other is never believed. */
  originalUriHeader: OriginalUriHeader
  cookieSecure: boolean
  cookieDomain: string | undefined
  /** Origins besides the service's own whose browser requests may log in and out. */
  allowedOrigins: string[]
}

/** The cookie's attributes: what the routes that set or clear it take. */
export type CookieSettings = Pick<HttpSettings, 'cookieSecure' | 'cookieDomain'>

function trustProxy (raw: string): TrustProxy {
  const lower = raw.toLowerCase()
  if (lower === 'true') return true
  if (lower === 'false') return false
  if (/^\d+$/.test(raw)) return Number(raw)
  const entries = raw.split(',').map((s) => s.trim()).filter((s) => s !== '')
  const shape = /^[0-9a-fA-F:.]+(\/\d{1,3})?$|^(loopback|linklocal|uniquelocal)$/
  for (const entry of entries) {
    if (!shape.test(entry)) throw refusal('AUTH_TRUST_PROXY', keywords(HttpSchema.properties.AUTH_TRUST_PROXY), entry)
  }
  return entries
}

/** An origin as a browser sends it in `Origin` (scheme://host[:port], no path), or the refusal naming `name`. */
export function origin (name: string, schema: Keywords, entry: string): string {
  let parsed: string | undefined
  try {
    parsed = new URL(entry).origin
  } catch {}
  if (parsed === undefined || parsed === 'null' || parsed !== entry) throw refusal(name, schema, entry)
  return parsed
}

export function readHttp (env: Env): HttpSettings {
  const vars = variables(HttpSchema, env)
  return {
    trustProxy: trustProxy(vars.read('AUTH_TRUST_PROXY')),
    originalUriHeader: vars.read('AUTH_ORIGINAL_URI_HEADER'),
    cookieSecure: vars.read('AUTH_COOKIE_SECURE'),
    cookieDomain: vars.read('AUTH_COOKIE_DOMAIN'),
    allowedOrigins: vars.read('AUTH_ALLOWED_ORIGINS').map((entry) => origin('AUTH_ALLOWED_ORIGINS', keywords(OriginSchema), entry))
  }
}

/** The cookie's domain as the service will use it, a caller's override included. */
export function checkHttp (settings: HttpSettings): void {
  if (settings.cookieDomain !== undefined) checkText('AUTH_COOKIE_DOMAIN', keywords(HttpSchema.properties.AUTH_COOKIE_DOMAIN), settings.cookieDomain)
}
