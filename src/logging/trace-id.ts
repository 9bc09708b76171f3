/**
 * The trace a request belongs to, for its access-log line. tracing/start.ts notes it when the
 * request's span starts; with tracing off nothing is noted and nothing is looked up.
 */

let tracing = false
const traceIds = new WeakMap<object, string>()

export function noteTraceId (request: object, traceId: string): void {
  tracing = true
  traceIds.set(request, traceId)
}

/** The request's trace id, or undefined (tracing off, or a request that is not traced). */
export function traceIdOf (request: object): string | undefined {
  return tracing ? traceIds.get(request) : undefined
}
