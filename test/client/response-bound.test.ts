import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { createAuthClient } from '@auth-token-service/guard/client'

/*
 * The typed client once buffered any response (a 2 GB body grew it by 602 MB).
 * Against a real HTTP server that streams a huge body, the answer is a protocol error
 * value, the stream is cut soon after the bound, and the client's memory barely moves.
 */

const CHUNK = Buffer.alloc(64 * 1024, 'a')
const HUGE = 256 * 1024 * 1024

/** A server that answers every request with `total` bytes, as fast as the client reads; counts what it wrote. */
async function hugeBodyServer (t: Test, options: { declareLength: boolean }): Promise<{ url: string, written: () => number }> {
  let written = 0
  const server = createServer((request, response: ServerResponse) => {
    request.resume()
    request.on('end', () => {
      response.writeHead(200, options.declareLength
        ? { 'content-type': 'application/json', 'content-length': String(HUGE) }
        : { 'content-type': 'application/json' })
      const pump = (): void => {
        while (written < HUGE && !response.destroyed) {
          written += CHUNK.length
          if (!response.write(CHUNK)) {
            response.once('drain', pump)
            return
          }
        }
        if (written >= HUGE) response.end()
      }
      pump()
    })
  })
  await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
  t.teardown(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => { server.close(resolve) })
  })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, written: () => written }
}

const inUse = (): number => {
  const memory = process.memoryUsage()
  return memory.heapUsed + memory.arrayBuffers
}

for (const declareLength of [false, true]) {
  t.test(`a ${HUGE / 1024 / 1024} MiB body ${declareLength ? 'with' : 'without'} a Content-Length: a protocol error, the stream cut, memory bounded`, async (t) => {
    const server = await hugeBodyServer(t, { declareLength })
    const client = createAuthClient({ baseUrl: server.url, timeoutMs: 30_000, maxResponseBytes: 1024 * 1024 })
    const before = inUse()
    const answer = await client.authenticate('a'.repeat(43))
    const grown = inUse() - before
    t.match(answer, { ok: false, error: { kind: 'protocol', httpStatus: 200, message: /larger than 1048576 bytes/ } })
    t.ok(server.written() < 32 * 1024 * 1024, `the server wrote ${(server.written() / 1024 / 1024).toFixed(1)} MiB before the client cut the stream`)
    t.ok(grown < 32 * 1024 * 1024, `memory in use grew by ${(grown / 1024 / 1024).toFixed(1)} MiB`)
  })
}

t.test('a body within the bound is read as before', async (t) => {
  const server = createServer((request, response) => {
    request.resume()
    request.on('end', () => {
      response.writeHead(403, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ status: 403, message: 'Unauthorized' }))
    })
  })
  await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
  t.teardown(async () => { await new Promise((resolve) => { server.close(resolve) }) })
  const client = createAuthClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, maxResponseBytes: 64 })
  t.same(await client.authenticate('a'.repeat(43)), { ok: false, error: { kind: 'status', status: 403, message: 'Unauthorized', httpStatus: 403 } })
})
