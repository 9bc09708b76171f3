import type { CookieSerializeOptions } from '@fastify/cookie'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AuthService, IssuedToken } from '../core/auth.js'
import type { Config } from '../config/config.js'
import { StatusError } from '../errors/status.js'
import { tokenCookieOptions } from '../http/cookie.js'
import { ownOrigin } from '../http/cross-site.js'
import { safeRedirect } from './redirect.js'
import type { Notice } from './pages.js'
import { tooManyAttempts } from './display.js'
import { cookieToken } from '@auth-token-service/protocol/token-source'
import { TOKEN_COOKIE } from '@auth-token-service/protocol/token'
import type { TokenRecord } from '@auth-token-service/protocol/layout'

/**
 * What every sign-in page and form shares: the pages' headers, where a page may send the browser
 * back to, the browser's own token and its cookie, and what a refused step tells the person.
 */

export interface SignedIn {
  token: string
  record: TokenRecord
}

export interface SignInContext {
  /** Mail is on (AUTH_SMTP_URL): the sign-in page offers "Forgot your password?". */
  readonly forgotPassword: boolean
  /** The token cookie's attributes: setting and clearing it share them. */
  readonly cookie: CookieSerializeOptions
  /** An HTML answer with the pages' headers (CSP, frame and referrer rules). */
  page (reply: FastifyReply, status: number, body: string): FastifyReply
  /** Whose sign-in this is: the setting, or the host name the browser asked for. */
  brandOf (request: FastifyRequest): string
  /** `rd` when the browser may be sent there (this origin, or a host AUTH_REDIRECT_ALLOWED names). */
  redirectOf (request: FastifyRequest, rd: string | undefined): string | undefined
  /** The browser's own token (the cookie only: a page never sees a Bearer header), or undefined. */
  browserToken (request: FastifyRequest): string | undefined
  /** The browser's active Login token and its record, or undefined. */
  signedIn (request: FastifyRequest): Promise<SignedIn | undefined>
  setToken (reply: FastifyReply, issued: IssuedToken): void
  /** After a sign-in: the cookie set, and back where the person was going, or to the signed-in page. */
  done (request: FastifyRequest, reply: FastifyReply, issued: IssuedToken, rd: string | undefined): FastifyReply
}

export const MESSAGES = {
  wrong: 'The username or password is not right.',
  wrongCode: 'That code is not right. Try again.',
  missing: 'Enter your username and password.',
  unavailable: 'Sign-in is unavailable right now. Try again in a moment.',
  expired: 'Your sign-in took too long. Enter your username and password again.',
  crossSite: 'This sign-in did not come from this site\'s own page. Sign in here.',
  signedOut: 'You are signed out.'
} as const

/** What a failed step tells the person; never the JSON body, never more than Login says. */
export function noticeFor (error: StatusError): Notice {
  if (error.status === 701) return { kind: 'error', text: MESSAGES.wrong }
  if (error.status === 429) return { kind: 'error', text: tooManyAttempts(error.headers['retry-after']) }
  if (error.status === 503) return { kind: 'error', text: MESSAGES.unavailable }
  if (error.status === 403) return { kind: 'error', text: MESSAGES.crossSite }
  return { kind: 'error', text: MESSAGES.missing }
}

/** A form's field, when it is text. */
export function field (body: unknown, name: string): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined
  const value = (body as Record<string, unknown>)[name]
  return typeof value === 'string' ? value : undefined
}

/** Where a page's form and its answer may go: this origin, and the hosts `rd` may name. */
function contentSecurityPolicy (redirectAllowed: readonly string[]): string {
  // form-action holds for a form's redirect too: the hosts a sign-in may send the person back to.
  const targets = redirectAllowed.flatMap((rule) => rule.startsWith('.') ? [rule.slice(1), `*${rule}`] : [rule])
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "connect-src 'self'",
    `form-action 'self'${targets.map((host) => ` ${host}`).join('')}`,
    "frame-ancestors 'none'",
    "base-uri 'none'"
  ].join('; ')
}

/**
 * The headers every sign-in page carries (the strict CSP, no framing, no sniffing, the referrer
 * rule), for a page another part of the service renders in the same style (the OpenID provider's
 * error page).
 */
export function pageHeaders (redirectAllowed: readonly string[]): Readonly<Record<string, string>> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': contentSecurityPolicy(redirectAllowed),
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    // Not no-referrer: under it a browser sends `Origin: null` with the form's POST, which the
    // login-CSRF rule (http/cross-site.ts) rightly refuses. same-origin sends the Origin (and a
    // Referer) to this origin only; no other site ever learns the page's URL.
    'referrer-policy': 'same-origin'
  }
}

/** The name the pages show: AUTH_SIGNIN_TITLE, or the host name the browser asked for (no port, no brackets). */
export function brandFor (signinTitle: string | undefined, hostname: string): string {
  return signinTitle ?? hostname.replace(/:\d+$/, '').replace(/^\[|\]$/g, '')
}

export function createSignInContext (
  config: Pick<Config, 'signinTitle' | 'redirectAllowed' | 'cookieSecure' | 'cookieDomain' | 'mail'>,
  auth: Pick<AuthService, 'authenticate'>
): SignInContext {
  const cookie = tokenCookieOptions(config)
  const headers = pageHeaders(config.redirectAllowed)

  const redirectOf = (request: FastifyRequest, rd: string | undefined): string | undefined =>
    safeRedirect(rd, ownOrigin(request), config.redirectAllowed)

  const browserToken = (request: FastifyRequest): string | undefined => {
    const token = cookieToken(request.headers.cookie)
    return typeof token === 'string' ? token : undefined
  }

  function setToken (reply: FastifyReply, issued: IssuedToken): void {
    reply.setCookie(TOKEN_COOKIE, issued.token, {
      ...cookie,
      expires: new Date(issued.expiresAt),
      maxAge: Math.max(0, Math.floor((issued.expiresAt - Date.now()) / 1000))
    })
  }

  return {
    forgotPassword: config.mail !== undefined,
    cookie,
    page (reply, status, body) {
      return reply.code(status).headers(headers).send(body)
    },
    brandOf: (request) => brandFor(config.signinTitle, request.hostname),
    redirectOf,
    browserToken,
    async signedIn (request) {
      const token = browserToken(request)
      if (token === undefined) return undefined
      try {
        return { token, record: await auth.authenticate(token) }
      } catch (error) {
        if (error instanceof StatusError && error.status === 403) return undefined
        throw error
      }
    },
    setToken,
    done (request, reply, issued, rd) {
      setToken(reply, issued)
      return reply.code(303).header('location', redirectOf(request, rd) ?? '/auth/signin').send()
    }
  }
}
