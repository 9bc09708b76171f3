import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Scope } from './processes.js'

/**
 * A small OTLP/HTTP trace receiver: what an exporter POSTs to /v1/traces, decoded from OTLP
 * JSON (OTEL_EXPORTER_OTLP_PROTOCOL=http/json) into one flat record per span. It keeps every
 * body as received too, so a test can search all of it (names, attributes, events, resource).
 * Protobuf bodies are counted and answered, not decoded (`undecoded`).
 */

export type AttributeValue = string | number | boolean | null | AttributeValue[]

export interface ReceivedSpan {
  traceId: string
  spanId: string
  /** Empty for a root span. */
  parentSpanId: string
  name: string
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number
  attributes: Record<string, AttributeValue>
  events: Array<{ name: string, attributes: Record<string, AttributeValue> }>
  status: { code?: number, message?: string }
  service: string
  scope: string
}

export interface OtlpReceiver {
  /** For OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends /v1/traces). */
  readonly endpoint: string
  spans (): ReceivedSpan[]
  /** Every body received, as text. */
  bodies (): string[]
  /** Requests whose body was not JSON. */
  undecoded (): number
  /** The content type of each request, in order. */
  contentTypes (): string[]
  /** Resolves once `match` holds for the spans received (polled), rejects after `timeoutMs`. */
  waitFor (what: string, match: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>
  close (): Promise<void>
}

interface OtlpAnyValue {
  stringValue?: string
  boolValue?: boolean
  intValue?: number | string
  doubleValue?: number
  arrayValue?: { values?: OtlpAnyValue[] }
}
interface OtlpKeyValue { key: string, value?: OtlpAnyValue }
interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind?: number
  attributes?: OtlpKeyValue[]
  events?: Array<{ name: string, attributes?: OtlpKeyValue[] }>
  status?: { code?: number, message?: string }
}
interface OtlpTraces {
  resourceSpans?: Array<{
    resource?: { attributes?: OtlpKeyValue[] }
    scopeSpans?: Array<{ scope?: { name?: string }, spans?: OtlpSpan[] }>
  }>
}

function valueOf (value: OtlpAnyValue | undefined): AttributeValue {
  if (value === undefined) return null
  if (value.stringValue !== undefined) return value.stringValue
  if (value.boolValue !== undefined) return value.boolValue
  if (value.intValue !== undefined) return Number(value.intValue)
  if (value.doubleValue !== undefined) return value.doubleValue
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(valueOf)
  return null
}

function attributesOf (list: OtlpKeyValue[] | undefined): Record<string, AttributeValue> {
  return Object.fromEntries((list ?? []).map((entry) => [entry.key, valueOf(entry.value)]))
}

async function bodyOf (request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

export async function startOtlpReceiver (scope: Scope): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = []
  const bodies: string[] = []
  let undecoded = 0
  const contentTypes: string[] = []
  const server = createServer((request, response) => {
    bodyOf(request).then((body) => {
      bodies.push(body)
      contentTypes.push(request.headers['content-type'] ?? '')
      if (request.url !== '/v1/traces' || request.headers['content-type']?.startsWith('application/json') !== true) {
        undecoded++
      } else {
        const traces = JSON.parse(body) as OtlpTraces
        for (const resourceSpans of traces.resourceSpans ?? []) {
          const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name'] ?? '')
          for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
            for (const span of scopeSpans.spans ?? []) {
              spans.push({
                traceId: span.traceId,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId ?? '',
                name: span.name,
                kind: span.kind ?? 0,
                attributes: attributesOf(span.attributes),
                events: (span.events ?? []).map((event) => ({ name: event.name, attributes: attributesOf(event.attributes) })),
                status: span.status ?? {},
                service,
                scope: scopeSpans.scope?.name ?? ''
              })
            }
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    }).catch(() => { response.writeHead(400).end() })
  })
  await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
  const close = async (): Promise<void> => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => { server.close(() => { resolve() }) })
  }
  scope.teardown(close)
  const { port } = server.address() as AddressInfo
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans: () => [...spans],
    bodies: () => [...bodies],
    undecoded: () => undecoded,
    contentTypes: () => [...contentTypes],
    async waitFor (what, match, timeoutMs = 15_000) {
      const until = Date.now() + timeoutMs
      while (!match(spans)) {
        if (Date.now() > until) throw new Error(`no ${what} among the ${spans.length} spans received: ${spans.map((s) => s.name).join(', ')}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      return [...spans]
    },
    close
  }
}
