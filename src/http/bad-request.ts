import type { FastifyError, FastifyRequest } from 'fastify'
import { knownParameter, PADDING, PARAMETER_LIMITS, reasons, type Reason } from '../errors/reasons.js'
import type { MalformedFormError } from './form-encoding.js'

/** The reasons (errors/reasons.ts) for what the HTTP edge refuses: a form, the parser, a schema, Fastify. */

/** Why a query string or form body the strict parser refused is bad. */
export function malformedFormReason (error: MalformedFormError, source: 'query string' | 'form body'): Reason {
  if (error.problem === 'proto') return reasons.protoParameter(source)
  if (error.parameter === undefined) return reasons.badPercentEncoding(`a parameter name in the ${source}`)
  return reasons.badPercentEncoding(knownParameter(error.parameter) ?? source)
}

/** Why Node's HTTP parser refused a request (its llhttp error code), for the 400 written to the socket. */
export function httpParserReason (code: string | undefined): Reason {
  switch (code) {
    case 'HPE_INVALID_METHOD': return reasons.httpMethod()
    case 'HPE_INVALID_URL': return reasons.httpTarget()
    case 'HPE_INVALID_VERSION': return reasons.httpVersion()
    case 'HPE_INVALID_CONSTANT': return reasons.httpRequestLine()
    case 'HPE_INVALID_HEADER_TOKEN': return reasons.httpHeader()
    // Not a number, or given twice with different values.
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_UNEXPECTED_CONTENT_LENGTH': return reasons.httpContentLength()
    case 'HPE_INVALID_TRANSFER_ENCODING': return reasons.httpTransferEncoding()
    case 'HPE_INVALID_CHUNK_SIZE': return reasons.httpChunk()
    default: return reasons.httpOther()
  }
}

/** One schema validation failure as Fastify hands it over (an Ajv error object). */
export interface ValidationFailure {
  keyword: string
  instancePath: string
  params: Record<string, unknown>
}

/**
 * Why a request failed schema validation: Fastify validates the path, query and body against
 * the route's schemas and reports the first failure with where it was (`context`). `sent` is
 * what was validated there; `repeatsAsArrays` says a parameter given twice arrives as an array
 * (a query string or a form body, not JSON). Only the value's shape is looked at, never its text.
 */
export function validationReason (failure: ValidationFailure | undefined, context: string | undefined, sent: unknown, repeatsAsArrays: boolean): Reason {
  if (failure === undefined) return reasons.requestNotValid()
  const named = failure.keyword === 'required' ? failure.params.missingProperty : failure.instancePath.slice(1)
  const parameter = knownParameter(typeof named === 'string' ? named : undefined)
  if (parameter === undefined) {
    return context === 'body' && failure.instancePath === '' ? reasons.bodyNotObject() : reasons.requestNotValid()
  }
  if (failure.keyword === 'required') return reasons.required(parameter)
  const value = typeof sent === 'object' && sent !== null ? (sent as Record<string, unknown>)[parameter] : undefined
  if (Array.isArray(value) && repeatsAsArrays) return reasons.givenMoreThanOnce(parameter)
  // A field that is not a string (a form's value came as its text, and was not one: parsing.ts).
  if (failure.keyword === 'type' && failure.params.type === 'integer') return reasons.notAWholeNumber(parameter)
  if (failure.keyword === 'type' && failure.params.type === 'boolean') return reasons.notTrueOrFalse(parameter)
  if (typeof value !== 'string') return reasons.notAString(parameter)
  switch (failure.keyword) {
    case 'maxLength':
      return Object.prototype.hasOwnProperty.call(PARAMETER_LIMITS, parameter) ? reasons.tooLong(parameter as keyof typeof PARAMETER_LIMITS) : reasons.notValid(parameter)
    case 'minLength': return reasons.empty(parameter)
    case 'pattern': return PADDING.has(parameter) ? reasons.paddingNotIdentifier(parameter) : reasons.containsNul(parameter)
    case 'const':
    case 'enum': return parameter === 'format' ? reasons.formatNotJson() : reasons.notValid(parameter)
    default: return reasons.notValid(parameter)
  }
}

/**
 * Why Fastify refused a request with a 400 of its own: a schema validation failure (the
 * first, with where it was: `validationContext`), or a body it could not read or parse.
 */
export function fastifyErrorReason (error: Error & { code?: unknown, validation?: FastifyError['validation'], validationContext?: FastifyError['validationContext'] }, request: Pick<FastifyRequest, 'body' | 'query' | 'params' | 'headers'>): Reason {
  if (error.validation !== undefined) {
    const context = error.validationContext
    const sent = context === 'body' ? request.body : context === 'querystring' ? request.query : context === 'params' ? request.params : undefined
    // A parameter given twice arrives as an array from a query string or a form body; in JSON an array is just not a string.
    const repeatsAsArrays = context === 'querystring' || (context === 'body' && /^application\/x-www-form-urlencoded\b/i.test(request.headers['content-type'] ?? ''))
    return validationReason(error.validation[0], context, sent, repeatsAsArrays)
  }
  switch (error.code) {
    case 'FST_ERR_CTP_EMPTY_JSON_BODY': return reasons.emptyJsonBody()
    case 'FST_ERR_CTP_INVALID_JSON_BODY': return reasons.bodyNotJson()
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH': return reasons.bodyLengthMismatch()
    case 'FST_ERR_ROUTE_MISSING_CONTENT_TYPE': return reasons.contentTypeRequired()
    default: return reasons.bodyUnreadable()
  }
}
