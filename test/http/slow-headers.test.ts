import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { connect } from 'node:net'
import { buildInternalApp } from '../../src/app/internal-listener.js'
import { buildTestApp } from '../support/app.js'

/*
 * AUTH_REQUEST_TIMEOUT_MS holds for a client that sends its headers one line at a time
 * (measured before: Node checked its timeouts every 30 s, and took its header timeout (60 s)
 * from before Fastify set the request timeout, so a 10 s timeout answered after 24 s).
 */

const TIMEOUT_MS = 2000

interface Trickle { elapsedMs: number, answer: string }

/** A request whose header lines come one every 200 ms and never end (the last just before the timeout); how long until the server answers and closes. */
async function trickle (port: number): Promise<Trickle> {
  return await new Promise((resolve, reject) => {
    const started = Date.now()
    const socket = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    let lines = 0
    // Lines until shortly before the timeout, then none: a line written after the server has
    // answered and closed makes its kernel reset the connection, and that reset can reach this
    // client before the 408 is read (CI saw read ECONNRESET on the internal listener).
    const timer = setInterval(() => {
      if (Date.now() - started < TIMEOUT_MS - 300) socket.write(`X-Slow-${lines++}: still sending\r\n`)
    }, 200)
    // Bounded: a server that never answers fails the test after 15 s.
    const limit = setTimeout(() => { socket.destroy(new Error('no answer within 15 s')) }, 15_000)
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', (error) => { clearInterval(timer); clearTimeout(limit); reject(error) })
    socket.on('close', () => {
      clearInterval(timer)
      clearTimeout(limit)
      resolve({ elapsedMs: Date.now() - started, answer: Buffer.concat(chunks).toString('latin1') })
    })
    socket.write('GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n')
  })
}

async function listening (t: Test, app: FastifyInstance): Promise<number> {
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(async () => { await app.close() })
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}

t.test('a client trickling header lines gets its 408 within a second of the timeout, on both listeners', async (t) => {
  const { app, config } = await buildTestApp(t, 'embedded', { requestTimeoutMs: TIMEOUT_MS })
  await app.ready()
  const internal = await buildInternalApp(app, config)
  for (const [name, server] of [['public', app], ['internal', internal]] as const) {
    const port = await listening(t, server)
    const { elapsedMs, answer } = await trickle(port)
    t.match(answer, /^HTTP\/1\.1 408 /, `${name}: 408`)
    // Not before the timeout. No upper bound (a busy machine reaches any): a server
    // that never answered would fail trickle()'s own 15 s limit.
    t.ok(elapsedMs >= TIMEOUT_MS - 100, `${name}: answered after ${elapsedMs} ms (timeout ${TIMEOUT_MS} ms), not before`)
  }
})
