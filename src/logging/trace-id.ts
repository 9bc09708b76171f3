/**
 * The trace a request belongs to, for its access-log line. tracing/requests.ts installs the
 * lookup when tracing is on; with tracing off nothing is looked up.
 */

type TraceIdLookup = (request: object) => string | undefined

let lookup: TraceIdLookup | undefined

/** Called once by tracing/requests.ts. */
export function useTraceIds (traceIdOfRequest: TraceIdLookup | undefined): void {
  lookup = traceIdOfRequest
}

/** The request's trace id, or undefined (tracing off, or a request that is not traced). */
export function traceIdOf (request: object): string | undefined {
  return lookup === undefined ? undefined : lookup(request)
}
