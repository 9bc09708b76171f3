import { createServer } from 'node:http'

/**
 * Where the traced service exports its spans (OTLP/HTTP, protobuf): a process of its own, as a
 * collector on the same machine would be, that reads each body, counts it and its spans (all,
 * and the server spans: one per traced request), and answers 200. GET /totals says how many
 * requests, bytes and spans it received.
 */
let requests = 0
let bytes = 0
let spans = 0
let serverSpans = 0

/** Reads a protobuf varint at `at`: [value, next offset]. */
function varint (buffer: Buffer, at: number): [number, number] {
  let value = 0
  let shift = 0
  for (;;) {
    const byte = buffer[at++]
    if (byte === undefined) throw new Error('truncated varint')
    value += (byte & 0x7f) * 2 ** shift
    if (byte < 0x80) return [value, at]
    shift += 7
  }
}

/** Calls `each` with [start, end) of every length-delimited field `field` of the message in buffer[start, end). */
function fields (buffer: Buffer, start: number, end: number, field: number, each: (start: number, end: number) => void): void {
  let at = start
  while (at < end) {
    const [key, afterKey] = varint(buffer, at)
    const wireType = key & 7
    at = afterKey
    if (wireType === 0) at = varint(buffer, at)[1]
    else if (wireType === 1) at += 8
    else if (wireType === 5) at += 4
    else if (wireType === 2) {
      const [length, afterLength] = varint(buffer, at)
      if (Math.floor(key / 8) === field) each(afterLength, afterLength + length)
      at = afterLength + length
    } else throw new Error(`wire type ${wireType}`)
  }
}

/** The varint field `field` of the message in buffer[start, end), or undefined. */
function varintField (buffer: Buffer, start: number, end: number, field: number): number | undefined {
  let at = start
  while (at < end) {
    const [key, afterKey] = varint(buffer, at)
    const wireType = key & 7
    at = afterKey
    if (wireType === 0) {
      const [value, next] = varint(buffer, at)
      if (Math.floor(key / 8) === field) return value
      at = next
    } else if (wireType === 1) at += 8
    else if (wireType === 5) at += 4
    else if (wireType === 2) {
      const [length, afterLength] = varint(buffer, at)
      at = afterLength + length
    } else throw new Error(`wire type ${wireType}`)
  }
  return undefined
}

const SPAN_KIND = 6
const SPAN_KIND_SERVER = 2

/** ExportTraceServiceRequest: resource_spans = 1; ResourceSpans: scope_spans = 2; ScopeSpans: spans = 2; Span: kind = 6. */
function countSpans (body: Buffer): void {
  fields(body, 0, body.length, 1, (rs, re) => {
    fields(body, rs, re, 2, (ss, se) => {
      fields(body, ss, se, 2, (start, end) => {
        spans++
        if (varintField(body, start, end, SPAN_KIND) === SPAN_KIND_SERVER) serverSpans++
      })
    })
  })
}

const server = createServer((request, response) => {
  if (request.method === 'GET') {
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ requests, bytes, spans, serverSpans }))
    return
  }
  const chunks: Buffer[] = []
  request.on('data', (chunk: Buffer) => { chunks.push(chunk) })
  request.on('end', () => {
    const body = Buffer.concat(chunks)
    requests++
    bytes += body.length
    countSpans(body)
    response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
  })
})
server.listen(Number(process.env.BENCH_PORT), '127.0.0.1')
