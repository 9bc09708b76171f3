import { badRequest, internalError, notFound, payloadTooLarge, StatusError, unsupportedMediaType } from '../errors/status.js'
import { reasons } from '../errors/reasons.js'

/** Map a numeric HTTP status that Fastify or Node produced to the contract's error. */
export function statusErrorForHttp (httpStatus: number): StatusError {
  switch (httpStatus) {
    case 404: return notFound()
    case 413: return payloadTooLarge()
    case 415: return unsupportedMediaType()
    case 503: return new StatusError(503, 'Service Unavailable', 503)
    case 408: return new StatusError(408, 'Request Timeout', 408)
    case 431: return new StatusError(431, 'Request Header Fields Too Large', 431)
    default:
      return httpStatus >= 400 && httpStatus < 500 ? badRequest(reasons.requestNotValid()) : internalError()
  }
}
