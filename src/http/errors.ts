import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Socket } from 'node:net'
import { reasons, type Reason } from '../errors/reasons.js'
import { fastifyErrorReason, httpParserReason, malformedFormReason } from './bad-request.js'
import { MalformedFormError } from './form-encoding.js'
import { MAX_PATH_SEGMENT } from './parsing.js'
import { badRequest, internalError, notFound, StatusError, UnavailableError, type Unavailable } from '../errors/status.js'
import { statusErrorForHttp } from './status-for-http.js'
import { createThrottledLog } from '@auth-token-service/protocol/throttled-log'

/**
 * The error model at the edge: whatever went wrong becomes the contract's status-message
 * answer, in one of three places. Errors of a request (a StatusError of the service, or one
 * of Fastify's) go through the error handler; errors before routing (bad percent-encoding in
 * the path, an over-long segment) through `frameworkErrors`; requests Node could not even
 * read (malformed, headers too large, too slow) through `answerClientError`, on the raw socket.
 */

export function toStatusError (error: FastifyError | StatusError | Error, request: FastifyRequest): StatusError {
  if (error instanceof StatusError) return error
  if (error instanceof MalformedFormError) return badRequest(malformedFormReason(error, 'form body'))
  const httpStatus = 'statusCode' in error && typeof error.statusCode === 'number' ? error.statusCode : 500
  if (httpStatus === 400 || ('validation' in error && error.validation !== undefined)) return badRequest(fastifyErrorReason(error, request))
  return httpStatus >= 500 && httpStatus !== 503 ? internalError() : statusErrorForHttp(httpStatus)
}

/** The detail of each 400 answered, for its access-log line (weak: gone with the request). */
const BAD_REQUEST_DETAILS = new WeakMap<FastifyRequest, Reason>()

/** The detail of the 400 this request was answered with, if it was. */
export function badRequestDetail (request: FastifyRequest): Reason | undefined {
  return BAD_REQUEST_DETAILS.get(request)
}

function sendStatusError (reply: FastifyReply, error: StatusError): FastifyReply {
  if (error.detail !== undefined) BAD_REQUEST_DETAILS.set(reply.request, error.detail)
  return reply.code(error.httpStatus).headers(error.headers).send(error.toBody())
}

const UNAVAILABLE_MESSAGES: Readonly<Record<Unavailable, string>> = {
  redis: 'service unavailable: Redis did not answer',
  database: 'service unavailable: the database did not answer',
  directory: 'service unavailable: the directory did not answer',
  'hash-queue': 'service unavailable: the password-hash queue is full',
  'hash-thread': 'service unavailable: a hashing thread failed',
  revoked: 'service unavailable: the account\'s tokens were revoked while this Login ran (it may be sent again)',
  'key-recovery': 'service unavailable: the client\'s look-ups of API keys the token store lost are spent for now'
}

/** The code or message of what made a 503, never its stack. */
function reasonOf (cause: unknown): string | undefined {
  if (!(cause instanceof Error)) return undefined
  const code = (cause as { code?: unknown }).code
  return typeof code === 'string' ? code : cause.message.slice(0, 200)
}

/**
 * The log of 503s: under a login flood or a backend outage they come by the thousand, and a
 * stack each (about 1 KB) said nothing the first had not. One short line per cause (what
 * could not answer, why) at most every 10 s, with the count of the repeats it stands for.
 * A full hash queue is load shed by design (warn); a backend that does not answer is an error.
 */
function unavailableLog (): (log: FastifyBaseLogger, error: UnavailableError) => void {
  const throttled = createThrottledLog()
  return (log, error) => {
    throttled(error.unavailable, (repeats) => {
      const line = { unavailable: error.unavailable, reason: reasonOf(error.cause), repeats }
      if (error.unavailable === 'hash-queue' || error.unavailable === 'revoked' || error.unavailable === 'key-recovery') log.warn(line, UNAVAILABLE_MESSAGES[error.unavailable])
      else log.error(line, UNAVAILABLE_MESSAGES[error.unavailable])
    })
  }
}

/** The error handler and the not-found handler: every error of a request answered as a status-message. */
export function registerErrorHandlers (app: FastifyInstance): void {
  const logUnavailable = unavailableLog()
  app.setErrorHandler((error: FastifyError | StatusError, request, reply) => {
    const status = toStatusError(error, request)
    if (status instanceof UnavailableError) {
      logUnavailable(request.log, status)
    } else if (status.httpStatus >= 500) {
      // Anything else is a bug: the whole error, stack included.
      request.log.error({ err: status.cause ?? error }, status.message)
    }
    return sendStatusError(reply, status)
  })
  app.setNotFoundHandler(async (_request, reply) => sendStatusError(reply, notFound()))
}

/**
 * Fastify's `frameworkErrors`: bad percent-encoding in the path, over-long segments; never echo
 * the path back. These run before any hook, so the headers every answer carries, and the
 * access-log line, are made here.
 */
export function answerFrameworkError (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer')
  const status = error.statusCode === 404
    ? notFound()
    : badRequest(error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? reasons.pathSegmentTooLong(MAX_PATH_SEGMENT) : reasons.badPercentEncoding('path'))
  request.log.info({ req: request, route: '(unmatched)', statusCode: status.httpStatus, detail: status.detail }, 'request completed')
  sendStatusError(reply, status)
}

function clientErrorStatus (code: string | undefined): number {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW': return 431
    case 'ERR_HTTP_REQUEST_TIMEOUT': return 408
    default: return 400
  }
}

/**
 * Headers for answers Node writes straight to the socket (malformed requests, over-long headers,
 * timeouts). False when the socket can no longer be written to (nothing was answered).
 */
function writeRawError (socket: Socket, error: StatusError): boolean {
  if (!socket.writable) return false
  const body = JSON.stringify(error.toBody())
  socket.end([
    `HTTP/1.1 ${error.httpStatus} ${error.message}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Cache-Control: no-store',
    'Referrer-Policy: no-referrer',
    'Connection: close',
    '',
    body
  ].join('\r\n'))
  return true
}

/** Fastify's `clientErrorHandler`: a request Node could not read, answered on the raw socket. */
export function answerClientError (log: FastifyBaseLogger, error: Error & { code?: string }, socket: Socket): void {
  const httpStatus = clientErrorStatus(error.code)
  const status = httpStatus === 400 ? badRequest(httpParserReason(error.code)) : statusErrorForHttp(httpStatus)
  // No request was read, so no access line will be: this line says who was refused and why.
  if (writeRawError(socket, status)) log.info({ remoteAddress: socket.remoteAddress, statusCode: status.httpStatus, detail: status.detail }, 'request refused')
}
