import { SpanStatusCode } from '@opentelemetry/api'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import t from 'tap'
import { ScrubErrorText } from '../../src/tracing/scrub.js'

/*
 * Error text may quote its input (V8's JSON syntax errors quote the body), so no span leaves
 * with an error's message: the status keeps its code, an exception event its type.
 */

t.test('status messages and exception messages and stacks are dropped before export', async (t) => {
  const exported = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new ScrubErrorText(), new SimpleSpanProcessor(exported)] })
  const span = provider.getTracer('test').startSpan('request')
  const error = new SyntaxError('Unexpected end of JSON input: {"password":"hunter2-secret"')
  span.recordException(error)
  span.setStatus({ code: SpanStatusCode.ERROR, message: error.message })
  span.end()
  await provider.forceFlush()
  const [finished] = exported.getFinishedSpans()
  t.same(finished?.status, { code: SpanStatusCode.ERROR }, 'the status code stays, its message goes')
  t.same(finished?.events.map((event) => [event.name, event.attributes]), [['exception', { 'exception.type': 'SyntaxError' }]], 'the exception\'s type stays')
  t.notMatch(JSON.stringify(finished?.events), /hunter2/)
  await provider.shutdown()
})
