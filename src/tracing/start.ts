import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { register } from 'node:module'
import { createAddHookMessageChannel } from 'import-in-the-middle'
import { context, SpanStatusCode, trace, type Context } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { registerInstrumentations } from '@opentelemetry/instrumentation'
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis'
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg'
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, NodeTracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace-node'
import { PACKAGE_VERSION } from '../config/version.js'
import type { TracingSettings } from './settings.js'
import { traceRequests } from './requests.js'
import { ScrubErrorText } from './scrub.js'
import { useSpanRunner, type SpanAttributes } from './spans.js'

/**
 * OpenTelemetry for `serve`, loaded only when tracing is on (cli/main.ts imports this module
 * dynamically, before the app, so that ioredis and pg are hooked when they load).
 *
 * ESM: the service is ES modules, so require-in-the-middle alone never sees `import 'ioredis'`.
 * As the OpenTelemetry authors document (opentelemetry-js doc/esm-support.md, and
 * import-in-the-middle's README), the import-in-the-middle loader hook is registered with
 * `module.register` before the modules to instrument are imported; with
 * `createAddHookMessageChannel` the hook wraps only the modules an instrumentation asked for
 * (ioredis, pg, pg-pool), not every module the service loads.
 *
 * The request spans are our own (tracing/requests.ts: two hooks on every Fastify instance, joined
 * through Fastify's `fastify.initialization` diagnostics channel), not @fastify/otel's, whose
 * span and context per request cost Authenticate more than its own work (bench/README.md, "Tracing's cost").
 *
 * Redaction (the logs' rules, test/tracing/tracing.test.ts): the request span's `url.path` is
 * the access log's redacted URL (route template, secret query values replaced); Redis
 * statements are the command name alone (never its arguments: keys are token hashes, values
 * records); SQL statements are the parameterised text, never the values
 * (enhancedDatabaseReporting off); exceptions are not recorded and status messages are
 * dropped (an error's message may quote the input, as a JSON syntax error does).
 */

export interface Tracing {
  /** Ends the span pipeline: exports what is buffered. */
  shutdown (): Promise<void>
}

async function otlpExporter (settings: TracingSettings): Promise<SpanExporter> {
  // Both read OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, _HEADERS, _TIMEOUT, _COMPRESSION themselves.
  if (settings.protocol === 'http/json') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http')
    return new OTLPTraceExporter()
  }
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto')
  return new OTLPTraceExporter()
}

function runInSpan (): <T>(name: string, attributes: SpanAttributes, work: () => Promise<T>) => Promise<T> {
  const tracer = trace.getTracer('auth-token-service', PACKAGE_VERSION)
  return async (name, attributes, work) => {
    const parent: Context = context.active()
    // Our spans only ever detail a request: none is started outside one (a rehash at start-up, say).
    if (trace.getSpan(parent) === undefined) return await work()
    return await tracer.startActiveSpan(name, { attributes }, parent, async (span) => {
      try {
        return await work()
      } catch (error) {
        span.setStatus({ code: SpanStatusCode.ERROR })
        throw error
      } finally {
        span.end()
      }
    })
  }
}

/** Starts tracing: call before the app (and with it ioredis and pg) is imported. */
export async function startTracing (settings: TracingSettings): Promise<Tracing> {
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel()
  register('import-in-the-middle/hook.mjs', import.meta.url, registerOptions)

  const resource = resourceFromAttributes({ 'service.name': 'auth-token-service', 'service.version': PACKAGE_VERSION })
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over our defaults.
    .merge(detectResources({ detectors: [envDetector] }))
  // The sampler (OTEL_TRACES_SAMPLER, _ARG), span limits (OTEL_SPAN_*) and the batch
  // (OTEL_BSP_*) come from the environment, as the SDK reads them; the export batch is read by
  // settings.ts too (a bad value stops the start; the default is the SDK's, DEFAULT_EXPORT_BATCH_SIZE).
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new ScrubErrorText(), new BatchSpanProcessor(await otlpExporter(settings), { maxExportBatchSize: settings.exportBatchSize })]
  })
  provider.register({ propagator: new W3CTraceContextPropagator() })

  const joinFastify = traceRequests(provider.getTracer('auth-token-service', PACKAGE_VERSION))
  subscribe('fastify.initialization', joinFastify)

  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new IORedisInstrumentation({
        requireParentSpan: true,
        dbStatementSerializer: (command) => command
      }),
      new PgInstrumentation({
        requireParentSpan: true,
        enhancedDatabaseReporting: false
      })
    ]
  })
  await waitForAllMessagesAcknowledged()
  useSpanRunner(runInSpan())

  return {
    async shutdown () {
      unsubscribe('fastify.initialization', joinFastify)
      useSpanRunner(undefined)
      await provider.shutdown()
    }
  }
}
