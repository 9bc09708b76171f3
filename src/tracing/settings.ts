import { ConfigError } from '../config/config-error.js'

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
 * Spans per export when OTEL_BSP_MAX_EXPORT_BATCH_SIZE does not say: the SDK's own 512. Each
 * export is an HTTP request with its own fixed cost (the request, its timers, the response,
 * the message's frame); under load four times fewer of them cost Authenticate less CPU per
 * request than the garbage collector's extra work for spans that wait longer (profiled: the
 * export path 11.4 µs per traced request with 128, 7.0 with 512; garbage collection +0.8 and
 * +1.5 µs over tracing off, bench/README.md "Tracing's cost, round three").
 */
export const DEFAULT_EXPORT_BATCH_SIZE = 512

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
