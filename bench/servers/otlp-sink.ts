import { createServer } from 'node:http'

/**
 * Where the traced service exports its spans (OTLP/HTTP, protobuf): a process of its own, as a
 * collector on the same machine would be, that reads each body, counts it and answers 200.
 * GET /totals says how many requests and bytes it received.
 */
let requests = 0
let bytes = 0
const server = createServer((request, response) => {
  if (request.method === 'GET') {
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ requests, bytes }))
    return
  }
  request.on('data', (chunk: Buffer) => { bytes += chunk.length })
  request.on('end', () => {
    requests++
    response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
  })
})
server.listen(Number(process.env.BENCH_PORT), '127.0.0.1')
