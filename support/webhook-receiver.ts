import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'
import type { Scope } from './processes.js'

/**
 * A webhook receiver for the tests and the benchmark: a real HTTP server that checks every
 * request's signature with the `standardwebhooks` package (the receivers' library, not the
 * service's code), records what it got, and answers as told (200, a 503 for a while, or not at all).
 */

export interface ReceivedWebhook {
  id: string
  type: string
  timestamp: string
  data: Record<string, unknown>
  /** The body as it came. */
  body: string
}

export interface WebhookReceiver {
  readonly url: string
  /** Verified requests with a 2xx answer, first one per webhook-id, in arrival order. */
  readonly events: ReceivedWebhook[]
  /** Every verified request, answered however (retries and duplicates included). */
  readonly attempts: ReceivedWebhook[]
  /** Requests whose signature, timestamp or headers the library refused. */
  readonly refused: () => number
  /** Deliveries of one webhook-id while another of the same id was still being answered. */
  readonly overlapping: () => number
  /** Ids delivered (2xx) more than once. */
  readonly duplicates: () => string[]
  /** What to answer from now on: an HTTP status, or 'hang' (never answer). */
  answer: number | 'hang'
  /** Held this long before answering (a slow receiver). */
  delayMs: number
  /** Resolves once `check` holds for the recorded events, or rejects after `timeoutMs`. */
  waitFor (what: string, check: (events: readonly ReceivedWebhook[]) => boolean, timeoutMs?: number): Promise<void>
  close (): Promise<void>
}

async function bodyOf (request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

export async function startWebhookReceiver (scope: Scope, secret: string, options: { port?: number } = {}): Promise<WebhookReceiver> {
  const verifier = new Webhook(secret)
  const events: ReceivedWebhook[] = []
  const attempts: ReceivedWebhook[] = []
  const delivered = new Map<string, number>()
  const inFlight = new Set<string>()
  const hanging = new Set<() => void>()
  let refused = 0
  let overlapping = 0

  const server = createServer((request, response) => {
    bodyOf(request).then(async (body) => {
      const headers = {
        'webhook-id': String(request.headers['webhook-id'] ?? ''),
        'webhook-timestamp': String(request.headers['webhook-timestamp'] ?? ''),
        'webhook-signature': String(request.headers['webhook-signature'] ?? '')
      }
      let payload: { type: string, timestamp: string, data: Record<string, unknown> }
      try {
        payload = verifier.verify(body, headers) as typeof payload
      } catch {
        refused++
        response.writeHead(400).end()
        return
      }
      const id = headers['webhook-id']
      if (inFlight.has(id)) overlapping++
      inFlight.add(id)
      const received: ReceivedWebhook = { id, type: payload.type, timestamp: payload.timestamp, data: payload.data, body }
      attempts.push(received)
      try {
        if (receiver.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, receiver.delayMs))
        const answer = receiver.answer
        if (answer === 'hang') {
          await new Promise<void>((resolve) => { hanging.add(resolve); request.socket.once('close', () => { hanging.delete(resolve); resolve() }) })
          return
        }
        if (answer >= 200 && answer < 300) {
          const times = (delivered.get(id) ?? 0) + 1
          delivered.set(id, times)
          if (times === 1) events.push(received)
        }
        response.writeHead(answer, { 'content-type': 'text/plain' }).end(answer < 300 ? 'ok' : 'not now')
      } finally {
        inFlight.delete(id)
      }
    }).catch(() => { response.destroy() })
  })
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  let closed = false
  const receiver: WebhookReceiver = {
    url: `http://127.0.0.1:${port}/hooks`,
    events,
    attempts,
    refused: () => refused,
    overlapping: () => overlapping,
    duplicates: () => [...delivered].filter(([, times]) => times > 1).map(([id]) => id),
    answer: 200,
    delayMs: 0,
    async waitFor (what, check, timeoutMs = 15_000) {
      const started = Date.now()
      while (!check(events)) {
        if (Date.now() - started > timeoutMs) throw new Error(`webhook receiver: timed out waiting for ${what} (${events.length} events: ${events.map((event) => event.type).join(', ')})`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    },
    async close () {
      if (closed) return
      closed = true
      for (const release of hanging) release()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => { resolve() }))
    }
  }
  scope.teardown(async () => { await receiver.close() })
  return receiver
}
