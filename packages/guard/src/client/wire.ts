/**
 * One request to the token service and its answer as a value: the wire details
 * shared by the client and the guard's HTTP mode. Nothing here throws for an
 * answer or a failure, and nothing here logs.
 */

import { TOKEN_COOKIE } from '@auth-token-service/protocol/token'
import { addTraceContext } from './trace-context.js'

export type FetchFunction = typeof globalThis.fetch

export type AuthClientError =
  /** The service (or something in front of it) answered with an error: the body's status when it is a status-message. */
  | { kind: 'status', status: number, message: string, httpStatus: number, retryAfterSeconds?: number, detail?: string }
  /** No answer: refused connection, reset, DNS failure, timeout (`timedOut`), a redirect (never followed). */
  | { kind: 'network', cause: unknown, timedOut: boolean }
  /** A success status with a body that is not the contract's. */
  | { kind: 'protocol', message: string, httpStatus: number }

export type Failure = { ok: false, error: AuthClientError }

export interface Answer {
  httpStatus: number
  headers: Headers
  body: unknown
}

export interface FormRequest {
  url: URL
  form: Record<string, string>
  cookieToken?: string | undefined
  timeoutMs: number
  fetch: FetchFunction
  /** Largest body read; past it the stream is cut and the answer is a protocol error. */
  maxResponseBytes?: number | undefined
}

/**
 * The service's answers are a few hundred bytes; 1 MiB leaves room for anything in front of it
 * (a proxy's error page) and still bounds what a broken or hostile endpoint can make us hold.
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024

/** A body over the bound: the read was cut there. */
class ResponseTooLarge extends Error {
  readonly limit: number
  constructor (limit: number) {
    super(`response body larger than ${limit} bytes`)
    this.limit = limit
    this.name = 'ResponseTooLarge'
  }
}

/**
 * POSTs a form body (secrets never go in a URL, where proxies log them) and reads
 * the JSON answer. Redirects are refused rather than followed: a 307 would resend
 * the password to wherever it points.
 */
export async function postForm (request: FormRequest): Promise<Answer | Failure> {
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'application/json'
  }
  // Percent-encoded (the service's cookie parser decodes): no value can break out of the header.
  if (request.cookieToken !== undefined) headers.cookie = `${TOKEN_COOKIE}=${encodeURIComponent(request.cookieToken)}`
  addTraceContext(headers)
  let response: Response
  let text: string
  const signal = AbortSignal.timeout(request.timeoutMs)
  const limit = request.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES
  let httpStatus = 0
  try {
    response = await request.fetch(request.url, {
      method: 'POST',
      headers,
      body: new URLSearchParams(request.form).toString(),
      redirect: 'error',
      signal
    })
    httpStatus = response.status
    text = await readText(response, signal, limit)
  } catch (cause) {
    if (cause instanceof ResponseTooLarge) return { ok: false, error: { kind: 'protocol', message: cause.message, httpStatus } }
    return { ok: false, error: { kind: 'network', cause, timedOut: isTimeout(cause) } }
  }
  let body: unknown
  try {
    body = text === '' ? undefined : JSON.parse(text)
  } catch {
    body = undefined
  }
  return { httpStatus: response.status, headers: response.headers, body }
}

/**
 * The body as text, bounded by the same signal as the request and by `limit` bytes (a 2 GB
 * body once grew a client by 602 MB). `response.text()` alone can stay
 * pending after an abort that lands mid-body (nodejs/node#56917, nodejs/undici#4089);
 * cancelling the reader always settles the read, and cuts the stream.
 */
async function readText (response: Response, signal: AbortSignal, limit: number): Promise<string> {
  if (response.body === null) return ''
  const declared = Number(response.headers.get('content-length'))
  if (declared > limit) {
    await response.body.cancel().catch(() => {})
    throw new ResponseTooLarge(limit)
  }
  const reader = response.body.getReader()
  const onAbort = (): void => { reader.cancel(signal.reason).catch(() => {}) }
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    const decoder = new TextDecoder()
    let text = ''
    let received = 0
    for (;;) {
      if (signal.aborted) throw signal.reason
      const chunk = await reader.read()
      if (signal.aborted) throw signal.reason
      if (chunk.done) return text + decoder.decode()
      received += chunk.value.byteLength
      if (received > limit) {
        await reader.cancel().catch(() => {})
        throw new ResponseTooLarge(limit)
      }
      text += decoder.decode(chunk.value, { stream: true })
    }
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}

function isTimeout (cause: unknown): boolean {
  return cause instanceof Error && (cause.name === 'TimeoutError' || (cause.cause instanceof Error && cause.cause.name === 'TimeoutError'))
}

export function isFailure (value: Answer | Failure): value is Failure {
  return 'ok' in value
}

function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** The body when it is the contract's success (`status` 0 with HTTP 200), else undefined. */
export function successBody (answer: Answer): Record<string, unknown> | undefined {
  const body = answer.body
  if (answer.httpStatus !== 200 || !isRecord(body) || body.status !== 0) return undefined
  return body
}

/**
 * An error answer as a value: the status-message body's status when there is one
 * (701, 403, 429, 503, 400, …), else the HTTP status of whatever answered (a proxy's 502).
 */
export function errorOf (answer: Answer): Failure {
  const body = answer.body
  if (answer.httpStatus >= 200 && answer.httpStatus < 300) {
    return { ok: false, error: { kind: 'protocol', message: 'unexpected success body', httpStatus: answer.httpStatus } }
  }
  const statusMessage = isRecord(body) && Number.isInteger(body.status) && typeof body.message === 'string'
  const error: AuthClientError = {
    kind: 'status',
    status: statusMessage ? body.status as number : answer.httpStatus,
    message: statusMessage ? body.message as string : `HTTP ${answer.httpStatus}`,
    httpStatus: answer.httpStatus
  }
  // A 400 says what is wrong with the request.
  if (statusMessage && typeof body.detail === 'string') error.detail = body.detail
  const retryAfter = answer.headers.get('retry-after')
  if (retryAfter !== null && /^\d+$/.test(retryAfter.trim())) error.retryAfterSeconds = Number(retryAfter.trim())
  return { ok: false, error }
}

export const protocolError = (answer: Answer, message: string): Failure =>
  ({ ok: false, error: { kind: 'protocol', message, httpStatus: answer.httpStatus } })

const EXPIRATION = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/

/** `expiration_date` is UTC without a zone designator (contract). */
export function parseExpirationDate (value: unknown): Date | undefined {
  if (typeof value !== 'string' || !EXPIRATION.test(value)) return undefined
  const date = new Date(`${value}Z`)
  return Number.isNaN(date.getTime()) ? undefined : date
}

export interface AuthenticatedToken {
  ok: true
  token: string
  expiresAt: Date
  accountId: string
  username: string
  federated: boolean
  /** Set when the credential is an API key (the answer's `kind` api_key): the key's public id. */
  keyId?: string
  /** Set when the credential is an OpenID Connect access token (the answer's `kind` oidc): its client. */
  clientId?: string
  /** The account's groups, sorted, as the service answered them; `[]` when none (or from a service of before groups). */
  groups: readonly string[]
}

const NO_GROUPS: readonly string[] = Object.freeze([])

/**
 * The answer's `groups`: absent (a service of before groups) is none; anything but an array of
 * strings is off the contract (undefined). Frozen: a guard hands the same array to every request
 * its cache answers, and no handler may change what the next one sees.
 */
function groupsOf (value: unknown): readonly string[] | undefined {
  if (value === undefined) return NO_GROUPS
  if (!Array.isArray(value) || !value.every((group) => typeof group === 'string')) return undefined
  return value.length === 0 ? NO_GROUPS : Object.freeze(value as string[])
}

/** POST <authenticateUrl> with the token in a form body (or, asked to, as the cookie). */
export async function authenticateAt (
  url: URL, token: string, options: {
    timeoutMs: number
    fetch: FetchFunction
    asCookie?: boolean | undefined
    maxResponseBytes?: number | undefined
    /** Sees the answer (its headers: the guard reads `Date`). */
    onAnswer?: (answer: Answer) => void
  }
): Promise<AuthenticatedToken | Failure> {
  const answer = await postForm({
    url,
    form: options.asCookie === true ? {} : { token },
    cookieToken: options.asCookie === true ? token : undefined,
    timeoutMs: options.timeoutMs,
    fetch: options.fetch,
    maxResponseBytes: options.maxResponseBytes
  })
  if (isFailure(answer)) return answer
  options.onAnswer?.(answer)
  const body = successBody(answer)
  if (body === undefined) return errorOf(answer)
  const expiresAt = parseExpirationDate(body.expiration_date)
  if (expiresAt === undefined || typeof body.account_id !== 'string' || typeof body.username !== 'string' || typeof body.federated !== 'boolean') {
    return protocolError(answer, 'Authenticate success without the token\'s account')
  }
  const groups = groupsOf(body.groups)
  if (groups === undefined) return protocolError(answer, 'Authenticate success whose groups are not a list of names')
  const authenticated: AuthenticatedToken = { ok: true, token, expiresAt, accountId: body.account_id, username: body.username, federated: body.federated, groups }
  if (body.kind === 'api_key' && typeof body.key_id === 'string') authenticated.keyId = body.key_id
  if (body.kind === 'oidc' && typeof body.client_id === 'string') authenticated.clientId = body.client_id
  return authenticated
}

/** The `AuthToken1` Set-Cookie line of an answer, as the service wrote it (to pass on to a browser). */
export function tokenSetCookie (headers: Headers): string | undefined {
  return headers.getSetCookie().find((line) => line.startsWith(`${TOKEN_COOKIE}=`))
}
