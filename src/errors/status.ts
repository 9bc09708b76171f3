import type { Reason } from './reasons.js'

/**
 * The status-message model of the contract: every answer, success or error, is
 * `{ status, message }`, and a 400 adds `detail`, what is wrong with the request.
 * Errors are values of `StatusError`, mapped to HTTP in one place (the app's error
 * handler); nothing below the routes knows HTTP beyond the `httpStatus` carried here.
 */

export interface StatusBody {
  status: number
  message: string
  /** Why a request is bad (400 only): a parameter and a problem, never a value sent. */
  detail?: string
}

export const SUCCESS: StatusBody = Object.freeze({ status: 0, message: 'Success' })

export class StatusError extends Error {
  readonly status: number
  readonly httpStatus: number
  readonly headers: Readonly<Record<string, string>>
  readonly detail: Reason | undefined

  constructor (
    status: number,
    message: string,
    httpStatus: number,
    headers: Record<string, string> = {},
    options?: { cause?: unknown, detail?: Reason }
  ) {
    super(message, options)
    this.name = 'StatusError'
    this.status = status
    this.httpStatus = httpStatus
    this.headers = headers
    this.detail = options?.detail
  }

  toBody (): StatusBody {
    return this.detail === undefined
      ? { status: this.status, message: this.message }
      : { status: this.status, message: this.message, detail: this.detail }
  }
}

/** A request the service cannot act on; `reason` (bad-request.ts) says what is wrong with it. */
export const badRequest = (reason: Reason): StatusError => new StatusError(400, 'Bad Request', 400, {}, { detail: reason })
export const unauthorized = (): StatusError => new StatusError(403, 'Unauthorized', 403)
export const notFound = (): StatusError => new StatusError(404, 'Not Found', 404)
export const methodNotAllowed = (allow: readonly string[]): StatusError =>
  new StatusError(405, 'Method Not Allowed', 405, { allow: allow.join(', ') })
/** RFC 9110 §15.5.20: a Host this listener does not answer (the internal listener's DNS-rebinding check). */
export const misdirected = (): StatusError => new StatusError(421, 'Misdirected Request', 421)
export const payloadTooLarge = (): StatusError => new StatusError(413, 'Payload Too Large', 413)
export const unsupportedMediaType = (): StatusError => new StatusError(415, 'Unsupported Media Type', 415)
export const tooManyRequests = (retryAfterSeconds: number): StatusError =>
  new StatusError(429, 'Too Many Requests', 429, { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) })
export const loginFailed = (): StatusError => new StatusError(701, 'Login Failed', 401)
/**
 * The account a 702 is for, as it was read before its password was checked: what a sign-in's
 * code step holds. Its revocation epoch is the one a password change, revoke-all or disable
 * raises, so the code step can tell that one of them came since.
 */
export interface HeldSignIn {
  accountId: string
  username: string
  tokenEpoch: number
}

/** The password was right, the account has an active second factor, and no `otp` came (api-contract, Second factor). */
export class SecondFactorRequired extends StatusError {
  readonly held: HeldSignIn
  constructor (held: HeldSignIn) {
    super(702, 'Second Factor Required', 401)
    this.held = held
  }
}
export const secondFactorRequired = (held: HeldSignIn): StatusError => new SecondFactorRequired(held)

/**
 * A sign-in begun before the account's password changed, its sessions were revoked or it was
 * disabled: it gets no token, and nothing is counted (the caller got nothing wrong; what held
 * them is simply over). Answered as a failed Login.
 */
export class SignInEnded extends StatusError {
  constructor () {
    super(701, 'Login Failed', 401)
  }
}
export const internalError = (): StatusError => new StatusError(500, 'Internal Server Error', 500)

/** What a 503 could not get an answer from: the one thing its log line names. */
export type Unavailable = 'redis' | 'database' | 'directory' | 'hash-queue' | 'hash-thread' | 'revoked' | 'key-recovery'

/**
 * A 503: something the answer depends on could not answer, or (hash-queue) had no room, or
 * (revoked) a revoke-all of the account overtook the Login, which may simply be sent again, or
 * (key-recovery) an API key the token store lost could not be looked up yet for this client.
 * The service is working as designed (it fails closed), so the log gets a short line
 * naming `unavailable`, not a stack.
 */
export class UnavailableError extends StatusError {
  readonly unavailable: Unavailable
  constructor (unavailable: Unavailable, cause?: unknown, headers: Record<string, string> = {}) {
    super(503, 'Service Unavailable', 503, headers, { cause })
    this.unavailable = unavailable
  }
}

/** A backend (Redis, Postgres, the directory) could not answer. Fails closed: never a false Success. */
export const serviceUnavailable = (unavailable: Unavailable, cause?: unknown): StatusError =>
  new UnavailableError(unavailable, cause)
