import type { FastifyError } from 'fastify'
import { ADMIN_PARAMETERS, reasons, type AdminParameter } from '../errors/reasons.js'
import { badRequest, internalError, StatusError } from '../errors/status.js'
import { statusErrorForHttp } from '../http/status-for-http.js'

/**
 * The admin API's errors: status-message objects that always carry a `detail` a script can
 * show (api-contract.md), never a value sent.
 */

const isAdminParameter = (name: unknown): name is AdminParameter => typeof name === 'string' && (ADMIN_PARAMETERS as readonly string[]).includes(name)

interface Validation { keyword: string, instancePath: string, params: Record<string, unknown> }

/** A schema failure names the parameter when it is one of the API's; the body or request otherwise. */
function validationError (error: FastifyError & { validation?: Validation[], validationContext?: string }): StatusError {
  const failure = error.validation?.[0]
  const named = failure?.keyword === 'required'
    ? failure.params.missingProperty
    : failure?.keyword === 'additionalProperties'
      ? undefined
      : failure?.instancePath.slice(1).split('/')[0]
  if (isAdminParameter(named)) return badRequest(failure?.keyword === 'required' ? reasons.adminParameterRequired(named) : reasons.adminParameterNotValid(named))
  return badRequest(error.validationContext === 'body' ? reasons.bodyNotObject() : reasons.requestNotValid())
}

export function adminError (error: FastifyError | StatusError): StatusError {
  if (error instanceof StatusError) {
    if (error.detail !== undefined) return error
    // The account administration's own errors, given the detail the contract asks for.
    switch (error.status) {
      case 404: return new StatusError(404, 'Not Found', 404, error.headers, { detail: reasons.unknownAccount() })
      case 409: return new StatusError(409, 'Conflict', 409, error.headers, { detail: reasons.usernameTaken() })
      default: return error
    }
  }
  if ('validation' in error && error.validation !== undefined) return validationError(error)
  return typeof error.statusCode === 'number' ? statusErrorForHttp(error.statusCode) : internalError()
}
