import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify'
import { reasons } from '../errors/reasons.js'
import { StatusError } from '../errors/status.js'

/**
 * Login CSRF: a page on another site could post a form to Login and sign
 * the victim's browser in as the attacker: SameSite=Lax guards the cookie sent, not the one
 * set, and a sibling subdomain is not cross-site to it at all.
 * A request that a browser marks as cross-site (`Sec-Fetch-Site: cross-site`), or whose
 * `Origin` is present and neither the service's own nor in AUTH_ALLOWED_ORIGINS, is
 * refused on the routes that set, use or clear the cookie for a change. Browsers send
 * these headers and pages cannot forge them; clients that are not browsers send neither
 * and pass. Authenticate is left alone: its padding-function (JSONP) form is a cross-site
 * script GET by design and changes nothing.
 */

/** The routes that set, use or clear the cookie to change something: Login, Logout, /auth/Password, the session-ending ones, the second factor's, the browser sign-in's (sign-in, sign-out, passkeys, the account page's forms, a password reset's), and the admin console's forms. */
const COOKIE_CHANGING_ROUTES = /^\/(auth\/(Login|Logout|Password|sessions|keys|totp|signin|signout|passkeys|account|reset)|console)(\/|$)/
/** Listing one's sessions changes nothing (and a page of another site cannot read the answer). */
const READ_ONLY = new Set(['GET', 'HEAD'])

export const crossSiteRefused = (): StatusError =>
  new StatusError(403, 'Forbidden', 403, {}, { detail: reasons.crossSiteRequest() })

/** The origin the request was addressed to, as a browser serializes it (`Origin`), or undefined. */
export function ownOrigin (request: FastifyRequest): string | undefined {
  try {
    // `request.protocol` believes X-Forwarded-Proto only from a trusted proxy (AUTH_TRUST_PROXY).
    return new URL(`${request.protocol}://${request.host}`).origin
  } catch {
    return undefined
  }
}

/** Whether a browser would call this request cross-site, or from an origin not allowed. */
export function isCrossSite (request: FastifyRequest, allowedOrigins: ReadonlySet<string>): boolean {
  if (request.headers['sec-fetch-site'] === 'cross-site') return true
  const origin = request.headers.origin
  if (origin === undefined) return false
  // `Origin: null` (a sandboxed frame, a redirect across sites) is present and allowed by nobody.
  return !allowedOrigins.has(origin) && origin !== ownOrigin(request)
}

export function refuseCrossSite (allowedOrigins: readonly string[]): onRequestHookHandler {
  const allowed = new Set(allowedOrigins)
  return (request, _reply, done) => {
    if (isCrossSite(request, allowed)) done(crossSiteRefused())
    else done()
  }
}

/**
 * Adds the check to the cookie-changing routes registered after this call (and to no other
 * route: Authenticate, the hot path, runs no hook for it).
 */
export function protectCookieRoutes (app: FastifyInstance, allowedOrigins: readonly string[]): void {
  const hook = refuseCrossSite(allowedOrigins)
  app.addHook('onRoute', (route) => {
    if (!COOKIE_CHANGING_ROUTES.test(route.url)) return
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (methods.every((method) => READ_ONLY.has(method))) return
    const own = route.onRequest
    route.onRequest = own === undefined ? [hook] : [hook, ...(Array.isArray(own) ? own : [own])]
  })
}
