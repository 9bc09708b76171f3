import { createRequire } from 'node:module'

/**
 * `traceparent` on the client's and the guard's calls to the service, so that one trace runs
 * from a protected service through Authenticate to Redis.
 *
 * The client is a library: the process it runs in sets up OpenTelemetry (or not), not we.
 * When some OpenTelemetry SDK has registered itself (the API's global, shared by every copy of
 * @opentelemetry/api 1.x in the process), its context and propagator are used through the
 * API, loaded then; otherwise nothing of OpenTelemetry is loaded and no header is added. An
 * active span is needed for a header: the propagator writes nothing without one.
 */

type OpenTelemetryApi = typeof import('@opentelemetry/api')

/** Where @opentelemetry/api 1.x keeps what an SDK registered (its `global-utils`). */
const API_GLOBAL = Symbol.for('opentelemetry.js.api.1')

let api: OpenTelemetryApi | undefined

/** The API when an SDK is registered in this process; loaded on first need (a CommonJS package: synchronously). */
function registeredApi (): OpenTelemetryApi | undefined {
  if (!(API_GLOBAL in globalThis)) return undefined
  api ??= createRequire(import.meta.url)('@opentelemetry/api') as OpenTelemetryApi
  return api
}

/** Adds the active trace's `traceparent` (and `tracestate`) to `headers`, when there is one. */
export function addTraceContext (headers: Record<string, string>): void {
  const loaded = registeredApi()
  loaded?.propagation.inject(loaded.context.active(), headers)
}
