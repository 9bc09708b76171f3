import { createServer } from 'node:http'
import { Webhook } from 'standardwebhooks'

/**
 * The webhook receiver of the service-webhooks server: a process of its own, as a receiver on
 * the same machine would be, that verifies every signature with the standardwebhooks package
 * (as docs/webhooks.md tells receivers to) and answers 200. GET /totals: what it got.
 */
const verifier = new Webhook(process.env.BENCH_WEBHOOK_SECRET ?? '')
let received = 0
let refused = 0
const types: Record<string, number> = {}

const server = createServer((request, response) => {
  if (request.method === 'GET') {
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ received, refused, types }))
    return
  }
  const chunks: Buffer[] = []
  request.on('data', (chunk: Buffer) => { chunks.push(chunk) })
  request.on('end', () => {
    try {
      const event = verifier.verify(Buffer.concat(chunks).toString('utf8'), {
        'webhook-id': String(request.headers['webhook-id'] ?? ''),
        'webhook-timestamp': String(request.headers['webhook-timestamp'] ?? ''),
        'webhook-signature': String(request.headers['webhook-signature'] ?? '')
      }) as { type: string }
      received++
      types[event.type] = (types[event.type] ?? 0) + 1
      response.writeHead(204).end()
    } catch {
      refused++
      response.writeHead(400).end()
    }
  })
})
server.listen(Number(process.env.BENCH_PORT), '127.0.0.1')
