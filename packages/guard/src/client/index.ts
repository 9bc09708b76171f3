import {
  authenticateAt, errorOf, isFailure, parseExpirationDate, postForm, protocolError, successBody, tokenSetCookie,
  type AuthClientError, type AuthenticatedToken, type Failure, type FetchFunction
} from './wire.js'

/**
 * A typed client of the token service: Login, Authenticate and Logout over Node's
 * own fetch (undici, a keep-alive pool). Every outcome is a value, never a throw:
 * `{ ok: true, … }` or `{ ok: false, error }` where the error is the body's status
 * (701, 403, 429, 503, 400, …), a network failure, or an answer off the contract.
 * Passwords and tokens travel only in form bodies (or the cookie, when asked), never
 * in a URL; nothing is logged.
 */

export type { AuthClientError, Failure, FetchFunction }

export interface AuthClientOptions {
  /** Where the service answers, e.g. `http://auth.internal:3000` (a path prefix is kept). */
  baseUrl: string | URL
  /** Per request, connection to last byte; default 5000 (a Login hashes a password). */
  timeoutMs?: number
  /** Another fetch (tests, a custom undici dispatcher); default the global one. */
  fetch?: FetchFunction
  /** Largest response body read (default 1 MiB); past it the answer is a `protocol` error and the stream is cut. */
  maxResponseBytes?: number
}

export interface LoginSuccess {
  ok: true
  token: string
  expiresAt: Date
  /** The service's `Set-Cookie: AuthToken1=…` line, to pass on to a browser as it is. */
  setCookie: string | undefined
}

export type AuthenticateSuccess = AuthenticatedToken

export interface LogoutSuccess {
  ok: true
  /** Set when the token came as the cookie: the line that clears it, to pass on to a browser. */
  setCookie: string | undefined
}

export interface LoginOptions {
  /** A token the caller already holds, sent as the `token` form field: a refresh when it is the account's. */
  token?: string
  /** A token to send as the `AuthToken1` cookie instead (a browser's cookie, forwarded). */
  cookie?: string
}

export interface TokenOptions {
  /** Send the token as the `AuthToken1` cookie instead of a form field. */
  asCookie?: boolean
}

export interface AuthClient {
  login (username: string, password: string, options?: LoginOptions): Promise<LoginSuccess | Failure>
  authenticate (token: string, options?: TokenOptions): Promise<AuthenticateSuccess | Failure>
  logout (token: string, options?: TokenOptions): Promise<LogoutSuccess | Failure>
}

/** `base` with a trailing slash, so that relative paths keep its own path prefix. */
export function endpoint (base: string | URL, path: string): URL {
  const root = new URL(base)
  if (!root.pathname.endsWith('/')) root.pathname += '/'
  root.search = ''
  root.hash = ''
  return new URL(path, root)
}

export function createAuthClient (options: AuthClientOptions): AuthClient {
  const timeoutMs = options.timeoutMs ?? 5000
  const fetchFunction = options.fetch ?? globalThis.fetch
  const maxResponseBytes = options.maxResponseBytes
  const urls = {
    login: endpoint(options.baseUrl, 'auth/Login'),
    authenticate: endpoint(options.baseUrl, 'auth/Authenticate'),
    logout: endpoint(options.baseUrl, 'auth/Logout')
  }

  return {
    async login (username, password, loginOptions = {}) {
      const form: Record<string, string> = { username, password }
      if (loginOptions.token !== undefined) form.token = loginOptions.token
      const answer = await postForm({ url: urls.login, form, cookieToken: loginOptions.cookie, timeoutMs, fetch: fetchFunction, maxResponseBytes })
      if (isFailure(answer)) return answer
      const body = successBody(answer)
      if (body === undefined) return errorOf(answer)
      const expiresAt = parseExpirationDate(body.expiration_date)
      if (typeof body.token !== 'string' || expiresAt === undefined) return protocolError(answer, 'Login success without a token and its expiry')
      return { ok: true, token: body.token, expiresAt, setCookie: tokenSetCookie(answer.headers) }
    },

    async authenticate (token, tokenOptions = {}) {
      return await authenticateAt(urls.authenticate, token, { timeoutMs, fetch: fetchFunction, asCookie: tokenOptions.asCookie, maxResponseBytes })
    },

    async logout (token, tokenOptions = {}) {
      const asCookie = tokenOptions.asCookie === true
      const answer = await postForm({
        url: urls.logout,
        form: asCookie ? {} : { token },
        cookieToken: asCookie ? token : undefined,
        timeoutMs,
        fetch: fetchFunction,
        maxResponseBytes
      })
      if (isFailure(answer)) return answer
      if (successBody(answer) === undefined) return errorOf(answer)
      return { ok: true, setCookie: tokenSetCookie(answer.headers) }
    }
  }
}
