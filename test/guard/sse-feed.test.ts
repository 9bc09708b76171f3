import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { createEventStreamParser, followRevocations, type ServerSentEvent } from '../../packages/guard/src/sse-feed.js'
import { eventually } from './support.js'

function parseAll (chunks: string[]): ServerSentEvent[] {
  const events: ServerSentEvent[] = []
  const parser = createEventStreamParser((event) => { events.push(event) })
  for (const chunk of chunks) parser.push(chunk)
  parser.end()
  return events
}

t.test('the event-stream parser', async (t) => {
  const stream = ': hello\r\nevent: ready\r\ndata: \r\n\r\nevent: revoked\ndata: a b\n\nevent:revoked\rdata:c\r\rdata: one\ndata: two\n\nevent: revoked\ndata: unfinished'
  const expected = [
    { type: 'ready', data: '' },
    { type: 'revoked', data: 'a b' },
    { type: 'revoked', data: 'c' },
    { type: 'message', data: 'one\ntwo' }
  ]
  t.same(parseAll([stream]), expected, 'CRLF, LF and CR line ends; comments; optional space; multi-line data; an unfinished event dropped')
  t.same(parseAll([...stream]), expected, 'the same one character per chunk (a CRLF split across chunks)')
  t.same(parseAll(['data\n\n', 'event: x\nid: 1\nretry: 5\n\n']), [{ type: 'message', data: '' }, { type: 'x', data: '' }],
    'a field without a colon; unknown fields ignored')
})

interface FakeFeed {
  url: string
  connections: () => number
  /** The open responses, newest last. */
  open: ServerResponse[]
}

async function fakeFeed (t: Test, handle: (response: ServerResponse, connection: number) => void): Promise<FakeFeed> {
  let connections = 0
  const open: ServerResponse[] = []
  const server = createServer((_request, response) => {
    connections++
    open.push(response)
    response.once('close', () => { open.splice(open.indexOf(response), 1) })
    handle(response, connections)
  })
  await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
  t.teardown(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => { server.close(resolve) })
  })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/auth/revocations`, connections: () => connections, open }
}

const streamHeaders = { 'content-type': 'text/event-stream' }

function recorder () {
  const log: string[] = []
  return {
    log,
    watcher: {
      revoked: (hashes: readonly string[]) => { log.push(`revoked ${hashes.join(',')}`) },
      live: () => { log.push('live') },
      interrupted: () => { log.push('interrupted') }
    }
  }
}

t.test('ready makes it live, revoked events are delivered, the end of the stream interrupts and it reconnects', async (t) => {
  const feed = await fakeFeed(t, (response, connection) => {
    response.writeHead(200, streamHeaders)
    // Before ready: nothing may be trusted yet, so nothing is delivered.
    response.write('event: revoked\ndata: early\n\n')
    response.write('event: ready\ndata: \n\n: ping\n\n')
    response.write(`event: revoked\ndata: h${connection}a h${connection}b\n\n`)
  })
  const { log, watcher } = recorder()
  const handle = followRevocations({ url: feed.url, minBackoffMs: 20 }, watcher)
  t.teardown(async () => { await handle.close() })
  await eventually(() => log.length === 2)
  t.same(log, ['live', 'revoked h1a,h1b'])
  feed.open[0]?.end()
  await eventually(() => log.length === 5)
  t.same(log.slice(2), ['interrupted', 'live', 'revoked h2a,h2b'])
  t.equal(feed.connections(), 2)
})

t.test('an answer other than a stream (the service\'s feed is down: 503) is retried with backoff', async (t) => {
  const feed = await fakeFeed(t, (response, connection) => {
    if (connection < 3) {
      response.writeHead(503, { 'content-type': 'application/json' }).end('{"status":503,"message":"Service Unavailable"}')
      return
    }
    response.writeHead(200, streamHeaders)
    response.write('event: ready\ndata: \n\n')
  })
  const { log, watcher } = recorder()
  const errors: unknown[] = []
  const handle = followRevocations({ url: feed.url, minBackoffMs: 20, onError: (error) => { errors.push(error) } }, watcher)
  t.teardown(async () => { await handle.close() })
  await eventually(() => log.includes('live'))
  t.same(log, ['live'], 'never interrupted: it was never live before')
  t.equal(feed.connections(), 3)
  t.equal(errors.length, 2, 'each failed attempt reported')
})

t.test('silence longer than idleTimeoutMs (a half-open connection) interrupts and reconnects', async (t) => {
  const feed = await fakeFeed(t, (response) => {
    response.writeHead(200, streamHeaders)
    response.write('event: ready\ndata: \n\n')
  })
  const { log, watcher } = recorder()
  const handle = followRevocations({ url: feed.url, minBackoffMs: 20, idleTimeoutMs: 200 }, watcher)
  t.teardown(async () => { await handle.close() })
  await eventually(() => log.length >= 3)
  t.same(log.slice(0, 3), ['live', 'interrupted', 'live'])
  t.ok(feed.connections() >= 2)
})

t.test('close stops it: the connection ends and it does not come back', async (t) => {
  const feed = await fakeFeed(t, (response) => {
    response.writeHead(200, streamHeaders)
    response.write('event: ready\ndata: \n\n')
  })
  const { log, watcher } = recorder()
  const handle = followRevocations({ url: feed.url, minBackoffMs: 20 }, watcher)
  await eventually(() => log.includes('live'))
  await handle.close()
  await eventually(() => feed.open.length === 0, 2000, 'the stream closed')
  const connections = feed.connections()
  await new Promise((resolve) => setTimeout(resolve, 150))
  t.equal(feed.connections(), connections, 'no reconnection after close')
})

t.test('close while waiting to reconnect to a dead service returns at once', async (t) => {
  const { watcher } = recorder()
  // A backoff no loaded machine's slowness comes near: a close that waited it out would take a minute.
  const handle = followRevocations({ url: 'http://127.0.0.1:1/auth/revocations', minBackoffMs: 60_000 }, watcher)
  await new Promise((resolve) => setTimeout(resolve, 100))
  const started = Date.now()
  await handle.close()
  t.ok(Date.now() - started < 30_000, `without waiting out the backoff (${Date.now() - started} ms)`)
})
