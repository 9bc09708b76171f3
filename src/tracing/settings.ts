import { ConfigError } from '../config.js'

/**
 * Whether tracing is asked for, read from the standard OpenTelemetry variables without loading
 * any of OpenTelemetry (the CLI reads this before it decides to import tracing/start.ts).
 */

export type TracesProtocol = 'http/protobuf' | 'http/json'

export interface TracingSettings {
  protocol: TracesProtocol
  /** Spans per export (OTEL_BSP_MAX_EXPORT_BATCH_SIZE); the rest of the batch's settings the SDK reads itself. */
  exportBatchSize: number
}

/**
 * Spans per export when OTEL_BSP_MAX_EXPORT_BATCH_SIZE does not say: 128, not the SDK's 512.
 * Under load a span waits in the queue until its batch is full; 512 of them outlive a young-
 * generation collection or two and are copied and promoted, which cost Authenticate more CPU
 * per request (profiled: garbage collection +10.7 µs per traced request with 512, +3.1 with
 * 128) than four times as many, smaller exports (issue 31 §6).
 */
export const DEFAULT_EXPORT_BATCH_SIZE = 128

function value (env: NodeJS.ProcessEnv, name: string): string | undefined {
  const raw = env[name]?.trim()
  return raw === undefined || raw === '' ? undefined : raw
}

/**
 * Tracing is on when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none
 * (the specification's switches). Undefined: off. A protocol this build cannot send (grpc) stops
 * the start with one line rather than tracing nothing in silence.
 */
export function tracingSettings (env: NodeJS.ProcessEnv): TracingSettings | undefined {
  if (value(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') === undefined && value(env, 'OTEL_EXPORTER_OTLP_ENDPOINT') === undefined) return undefined
  if (value(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return undefined
  const exporter = value(env, 'OTEL_TRACES_EXPORTER')?.toLowerCase()
  if (exporter === 'none') return undefined
  if (exporter !== undefined && exporter !== 'otlp') throw new ConfigError('OTEL_TRACES_EXPORTER', `"${exporter}" is not supported: otlp (the default) or none`)
  const variable = value(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') === undefined ? 'OTEL_EXPORTER_OTLP_PROTOCOL' : 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
  const protocol = value(env, variable) ?? 'http/protobuf'
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    throw new ConfigError(variable, `"${protocol}" is not supported: http/protobuf (the default) or http/json`)
  }
  const batch = value(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE')
  const exportBatchSize = batch === undefined ? DEFAULT_EXPORT_BATCH_SIZE : Number(batch)
  if (!Number.isInteger(exportBatchSize) || exportBatchSize < 1) throw new ConfigError('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', `"${batch ?? ''}" is not a whole number of spans`)
  return { protocol, exportBatchSize }
}
