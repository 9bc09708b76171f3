import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import type { AuthTokenGuardOptions } from '@auth-token-service/guard'
import { buildGuardedApp, MODES, startTokenService, type GuardMode, type RunningService } from './support.js'

/*
 * With a TCP proxy between a guard and its backend frozen (SIGSTOP: the
 * connections stay open, nothing flows), a token logged out at the service stayed accepted
 * by the HTTP-mode guard for 29.9 s and by the direct-mode guard for 3.2-5.9 s. A cache may
 * answer only while a heartbeat proves its feed live: a logged-out token is refused within
 * 1 s in both modes, whatever the network does.
 */

/** The promise under test: no Success for a request sent this long after the Logout returned. */
const LIMIT_MS = 1000

/** A TCP proxy in a process of its own (so it can be frozen), forwarding to host:port. */
async function startProxy (t: Test, host: string, port: number): Promise<{ port: number, process: ChildProcess }> {
  const source = `
const net = require('node:net')
const [host, port] = [process.argv[1], Number(process.argv[2])]
const server = net.createServer((client) => {
  const upstream = net.connect(port, host)
  client.pipe(upstream)
  upstream.pipe(client)
  const end = () => { client.destroy(); upstream.destroy() }
  for (const socket of [client, upstream]) { socket.on('error', end); socket.on('close', end) }
})
server.listen(0, '127.0.0.1', () => { process.stdout.write(server.address().port + '\\n') })
`
  const child = spawn(process.execPath, ['-e', source, host, String(port)], { stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(async () => {
    child.kill('SIGCONT')
    child.kill('SIGKILL')
    if (child.exitCode === null && child.signalCode === null) await once(child, 'exit')
  })
  const [line] = await once(child.stdout as NodeJS.ReadableStream, 'data') as [Buffer]
  return { port: Number(line.toString().trim()), process: child }
}

function optionsThrough (service: RunningService, mode: GuardMode, proxyPort: number): AuthTokenGuardOptions {
  const cache = { maxEntries: 100, ttlMs: 120_000 }
  return mode === 'direct'
    // The service's database number too (TEST_REDIS_URL may name one): the proxy only forwards bytes.
    ? { redisUrl: `redis://127.0.0.1:${proxyPort}${new URL(service.redisUrl).pathname}`, keyPrefix: service.keyPrefix, cache }
    : { authenticateUrl: `http://127.0.0.1:${proxyPort}/auth/Authenticate`, cache }
}

for (const mode of MODES) {
  t.test(`${mode} mode: a frozen feed stops the cache within ${LIMIT_MS} ms of a Logout`, async (t) => {
    const service = await startTokenService(t)
    const upstream = mode === 'direct' ? new URL(service.redisUrl) : new URL(service.baseUrl)
    const proxy = await startProxy(t, upstream.hostname, Number(upstream.port))
    const guarded = await buildGuardedApp(t, optionsThrough(service, mode, proxy.port))
    const token = await service.login()
    for (let i = 0; i < 3; i++) t.equal(await guarded.status(token), 200, 'accepted through the proxy')
    // Heartbeats flowing, the answer cached.
    await sleep(500)
    t.equal(await guarded.status(token), 200)

    proxy.process.kill('SIGSTOP')
    await service.logout(token)
    const loggedOut = performance.now()
    // Requests every 20 ms for 2 s, not waiting for each: an uncached one waits for the frozen proxy until the guard's timeout.
    const pending: Array<Promise<{ sentAt: number, status: number }>> = []
    while (performance.now() - loggedOut < 2000) {
      const sentAt = performance.now() - loggedOut
      pending.push(guarded.status(token).then((status) => ({ sentAt, status })))
      await sleep(20)
    }
    const answers = await Promise.all(pending)
    const passed = answers.filter((answer) => answer.status === 200)
    const lastPass = Math.max(-1, ...passed.map((answer) => answer.sentAt))
    t.comment(`${mode}: frozen proxy, token logged out: ${passed.length} of ${answers.length} requests still passed (from the cache), ` +
      `the last sent ${lastPass.toFixed(0)} ms after the Logout returned; the others: ${[...new Set(answers.filter((a) => a.status !== 200).map((a) => a.status))].join(', ')}`)
    t.ok(lastPass < LIMIT_MS, `no request sent ${LIMIT_MS} ms or more after the Logout passed (the last: ${lastPass.toFixed(0)} ms)`)
    t.ok(answers.every((answer) => [200, 403, 503].includes(answer.status)), 'only 200 (before), 403 or 503')
    proxy.process.kill('SIGCONT')
    await sleep(0)
  })
}

t.test('the service stops its heartbeats when its own proof lapses', async (t) => {
  // The route alone: no heartbeat goes out for a feed whose last proof has lapsed.
  const { default: Fastify } = await import('fastify')
  const { revocationRoutes } = await import('../../src/core/routes/revocations.js')
  const { createMemoryTokenStore } = await import('../../src/core/stores/memory/token-store.js')
  const tokens = createMemoryTokenStore({ denyTtlMs: 1000 })
  let proof: ((validForMs: number) => void) | undefined
  const watchRevocations: typeof tokens.watchRevocations = (watcher) => {
    watcher.live(0)
    proof = (ms) => { watcher.live(ms) }
    return () => {}
  }
  const app = Fastify({ logger: false, exposeHeadRoutes: false })
  await app.register(revocationRoutes, { revocations: { ...tokens, watchRevocations }, heartbeatMs: 50 })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(async () => { await app.close() })
  const response = await fetch(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}/auth/revocations`)
  const reader = response.body?.getReader()
  if (reader === undefined) throw new Error('no body')
  const opened = performance.now()
  proof?.(300)
  // Heartbeats by arrival time, read in the background.
  const heartbeats: number[] = []
  const reading = (async () => {
    const decoder = new TextDecoder()
    for (;;) {
      const next = await reader.read().catch(() => ({ done: true as const, value: undefined }))
      if (next.done) return
      const at = performance.now() - opened
      for (const _match of decoder.decode(next.value, { stream: true }).matchAll(/event: heartbeat\ndata: \d+\n\n/g)) heartbeats.push(at)
    }
  })()
  // Counted, not timed by arrival: a heartbeat sent in time but read late on a busy machine
  // must not look like one sent after the proof lapsed. The quiet stretch starts
  // 700 ms after the lapse.
  await sleep(1000)
  const whileProven = heartbeats.length
  t.ok(whileProven > 0, `heartbeats while proven (at ${heartbeats.map((at) => at.toFixed(0)).join(', ')} ms)`)
  await sleep(500)
  t.equal(heartbeats.length, whileProven, 'none once the proof (300 ms) has lapsed')
  proof?.(500)
  await sleep(300)
  t.ok(heartbeats.length > whileProven, 'again once proven again')
  await reader.cancel()
  await reading
})
