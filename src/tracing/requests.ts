import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type Tracer } from '@opentelemetry/api'
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { redactUrl } from '@auth-token-service/protocol/redact'
import { useTraceIds } from '../logging/trace-id.js'

/**
 * One server span per request, by two hooks of our own (tracing/start.ts says why): what @fastify/otel
 * did for us, at the cost of the few attributes we keep. A span starts when the request
 * arrives (onRequest), as a child of the caller's `traceparent` when one came, and ends when
 * the answer is handed over (the first onSend hook, as @fastify/otel ended it: an answer to a
 * caller who left still ends it). The rest of the request (handler, Redis and Postgres
 * commands, our argon2 and LDAP spans) runs in the span's context, so their spans are its
 * children. A request the sampler leaves out costs its sampling decision and nothing else:
 * no context is entered, no attribute is built.
 *
 * Attributes (semantic conventions): `http.request.method`, `http.route` (the route
 * template), `url.path` (the access log's redacted URL: never a token or a password from the
 * path or the query), `http.response.status_code`; status ERROR for a 5xx, with no message.
 */

const kSpan = Symbol('auth-token-service.requestSpan')

declare module 'fastify' {
  interface FastifyRequest {
    [kSpan]: Span | null
  }
}

/** Spans of the probes and the metrics scrape are noise (a probe a second); they are not traced. */
const UNTRACED_PATHS = /^\/(?:health(?:\/|$)|metrics$)/

/** The hooks, for every Fastify instance the process creates (the `fastify.initialization` diagnostics channel). */
export function traceRequests (tracer: Tracer): (message: unknown) => void {
  function startRequestSpan (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
    // Fastify builds a fresh routeOptions object on every read: read once.
    const template = request.routeOptions.url
    if (UNTRACED_PATHS.test(template ?? request.url)) {
      done()
      return
    }
    const parent: Context = request.headers.traceparent === undefined ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, request.headers)
    const attributes = template === undefined
      ? { 'http.request.method': request.method }
      : { 'http.request.method': request.method, 'http.route': template }
    const span = tracer.startSpan('request', { kind: SpanKind.SERVER, attributes }, parent)
    request[kSpan] = span
    if (!span.isRecording()) {
      done()
      return
    }
    // Replaces the URL as sent, which may carry a token or a password (path or query).
    span.setAttribute('url.path', redactUrl(request.url, template))
    context.with(trace.setSpan(parent, span), done)
  }

  function endRequestSpan (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (error: null, payload: unknown) => void): void {
    const span = request[kSpan]
    // Not recording: left out by the sampler, or already ended (an onSend hook that failed sends the error answer through them again).
    if (span !== null && span.isRecording()) {
      const status = reply.statusCode
      span.setAttribute('http.response.status_code', status)
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR })
      span.end()
    }
    done(null, payload)
  }

  useTraceIds((request) => (request as FastifyRequest)[kSpan]?.spanContext().traceId)

  return (message) => {
    const { fastify } = message as { fastify: FastifyInstance }
    // Declared before any request exists, so every request has the same shape.
    fastify.decorateRequest(kSpan, null)
    fastify.addHook('onRequest', startRequestSpan)
    fastify.addHook('onSend', endRequestSpan)
  }
}
