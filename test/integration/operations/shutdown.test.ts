import { Agent, request } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { freshRedisPrefix, requireRedis } from '../../../support/redis.js'
import { jsonObject } from '../../operations/support.js'
import { migratedDatabaseUrl } from '../../../support/postgres.js'
import { type ServiceProcess, startService } from '../../../support/service.js'
import { tempDir } from '../../../support/processes.js'
import { holdLogin } from '../../support/held-request.js'

/*
 * SIGTERM under load, on the built service as a real process on
 * Postgres and Redis. Twenty keep-alive clients run Authenticate and Login in a loop;
 * mid-load the process gets SIGTERM. What must hold:
 *
 * - readiness answers 503 from the signal on, for SHUTDOWN_DELAY_MS, while requests
 *   are still served (load balancers stop sending before anything is refused);
 * - every request that received response headers received a complete body, and a
 *   correct one: 200 with the operation's success, never a 5xx (in-flight requests
 *   finish, and so do requests that arrive on open connections while closing);
 * - a request that received no headers failed at the connection (refused, or reset
 *   before any answer): it was never accepted and then dropped half-way;
 * - the process exits 0 within SHUTDOWN_TIMEOUT_MS;
 * - tokens issued before the shutdown are still active after a restart (Redis).
 */

const SHUTDOWN_DELAY_MS = 1000
// Far above what the close takes (over 8 s, the old setting, at a load of 30 on
// this 2-core machine, when it ended killed): the claim here is the order, not the time.
const SHUTDOWN_TIMEOUT_MS = 30_000
const CLIENTS = 20
const LOGIN_CLIENTS = 6
const USERNAME = 'loader'
const PASSWORD = 'load & test pw'
const TOKEN = /^2[A-Za-z0-9_-]{45}$/

interface Outcome {
  operation: 'login' | 'authenticate' | 'ready'
  /** Sent as x-request-id, to find the request in the service's access log. */
  id: string
  sentAt: number
  endedAt: number
  /** Response headers arrived. */
  answered: boolean
  /** The body arrived whole (the response ended). */
  complete: boolean
  status?: number
  body?: string
  error?: string
}

let sent = 0

/** One request; resolves with what happened to it, never rejects. */
async function send (agent: Agent | false, url: string, method: 'GET' | 'POST', operation: Outcome['operation'], payload?: string): Promise<Outcome> {
  return await new Promise((resolve) => {
    const sentAt = performance.now()
    let settled = false
    const id = `${operation}-${++sent}`
    const done = (outcome: Omit<Outcome, 'operation' | 'id' | 'sentAt' | 'endedAt'>): void => {
      if (settled) return
      settled = true
      resolve({ operation, id, sentAt, endedAt: performance.now(), ...outcome })
    }
    const headers: Record<string, string> = payload === undefined
      ? { 'x-request-id': id }
      : { 'x-request-id': id, 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(Buffer.byteLength(payload)) }
    const req = request(url, { agent, method, headers, timeout: 15_000 }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => { chunks.push(chunk) })
      res.on('end', () => { done({ answered: true, complete: true, status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') }) })
      res.on('error', (error: Error & { code?: string }) => { done({ answered: true, complete: false, status: res.statusCode, error: error.code ?? error.message }) })
      res.on('close', () => { done({ answered: true, complete: false, status: res.statusCode, error: 'closed before the end of the body' }) })
    })
    req.on('timeout', () => { req.destroy(Object.assign(new Error('client timeout'), { code: 'CLIENT_TIMEOUT' })) })
    req.on('error', (error: Error & { code?: string }) => { done({ answered: false, complete: false, error: error.code ?? error.message }) })
    req.end(payload)
  })
}

const loginBody = new URLSearchParams({ username: USERNAME, password: PASSWORD }).toString()

/** What is wrong with an answered request, or undefined when it is right. */
function wrongness (outcome: Outcome): string | undefined {
  if (!outcome.complete) return `headers but no whole body (${outcome.error ?? '?'})`
  const body = jsonObject(outcome.body ?? '')
  if (outcome.status !== 200) return `HTTP ${outcome.status}: ${outcome.body}`
  if (outcome.operation === 'login') {
    return body?.status === 0 && typeof body.token === 'string' && TOKEN.test(body.token) ? undefined : `a Login 200 without a token: ${outcome.body}`
  }
  return body?.status === 0 && body.username === USERNAME ? undefined : `an Authenticate 200 that is not a success: ${outcome.body}`
}

/** Connection-level failures: the request never reached a handler that answered. */
const REFUSED_OR_RESET = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE'])

t.test('SIGTERM under keep-alive load: readiness fails first, accepted requests finish, exit 0, tokens survive', async (t) => {
  const env = {
    DATABASE_URL: await migratedDatabaseUrl(t),
    REDIS_URL: await requireRedis(),
    AUTH_REDIS_KEY_PREFIX: await freshRedisPrefix(t),
    AUTH_BOOTSTRAP_USERNAME: USERNAME,
    AUTH_BOOTSTRAP_PASSWORD: PASSWORD,
    SHUTDOWN_DELAY_MS: String(SHUTDOWN_DELAY_MS),
    SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
    LOG_LEVEL: 'info'
  }
  const cwd = await tempDir(t, 'ats-shutdown-')
  const service: ServiceProcess = await startService(t, env, { cwd })
  const base = service.baseUrl

  const first = await send(false, `${base}/auth/Login`, 'POST', 'login', loginBody)
  t.equal(wrongness(first), undefined, 'a first Login')
  const firstToken = String(jsonObject(first.body ?? '')?.token)
  t.equal((await send(false, `${base}/health/ready`, 'GET', 'ready')).status, 200, 'ready before the signal')

  const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS })
  t.teardown(() => { agent.destroy() })
  const outcomes: Outcome[] = []
  let running = true
  const client = async (index: number): Promise<void> => {
    const login = index < LOGIN_CLIENTS
    while (running) {
      const outcome = login
        ? await send(agent, `${base}/auth/Login`, 'POST', 'login', loginBody)
        : await send(agent, `${base}/auth/Authenticate/${firstToken}`, 'GET', 'authenticate')
      outcomes.push(outcome)
      // Back off a little once the service is gone, so the loop does not spin.
      if (!outcome.answered) await sleep(20)
    }
  }
  const load = Promise.all(Array.from({ length: CLIENTS }, async (_, index) => { await client(index) }))

  await sleep(1500)
  const signalAt = performance.now()
  const answeredBeforeSignal = outcomes.filter((o) => o.answered).length
  t.ok(service.kill('SIGTERM'), 'SIGTERM sent mid-load')

  // Readiness, polled on fresh connections as a load balancer would.
  const readiness: Array<{ at: number, status?: number, accepting?: unknown, error?: string }> = []
  let exitedAt: number | undefined
  const exitCode = service.exited.then(({ code }) => { exitedAt = performance.now(); return code })
  const poller = (async () => {
    while (exitedAt === undefined && performance.now() - signalAt < SHUTDOWN_TIMEOUT_MS + 2000) {
      const outcome = await send(false, `${base}/health/ready`, 'GET', 'ready')
      const checks = jsonObject(outcome.body ?? '')?.checks
      readiness.push({ at: outcome.sentAt - signalAt, status: outcome.status, accepting: typeof checks === 'object' && checks !== null && 'accepting' in checks ? checks.accepting : undefined, error: outcome.error })
      await sleep(50)
    }
  })()

  const deadline = sleep(SHUTDOWN_TIMEOUT_MS + 3000).then(() => 'timeout' as const)
  const code = await Promise.race([exitCode, deadline])
  // Keep the clients going a little past the exit: they must see refusals, not hangs.
  await sleep(300)
  running = false
  await Promise.all([load, poller])
  agent.destroy()

  t.equal(code, 0, 'the process exits 0')
  const tookMs = (exitedAt ?? Infinity) - signalAt
  t.ok(tookMs >= SHUTDOWN_DELAY_MS, `not before SHUTDOWN_DELAY_MS (took ${Math.round(tookMs)} ms)`)
  // Within SHUTDOWN_TIMEOUT_MS: the log says so (closed in order, not killed by the timeout), not
  // a duration, which a busy machine can stretch.
  t.match(service.output(), /closing: readiness now answers 503/)
  t.match(service.output(), /"msg":"closed"/, 'closed in order, not killed by the timeout')
  t.notMatch(service.output(), /took longer than SHUTDOWN_TIMEOUT_MS/, 'not ended by the timeout')

  // Readiness: 503 (accepting: no) from shortly after the signal; never ready again.
  const firstNotReady = readiness.findIndex((r) => r.status === 503)
  t.ok(firstNotReady >= 0, 'readiness answered 503 during the delay')
  const notReady = readiness.filter((r) => r.status === 503)
  t.ok(notReady.every((r) => r.accepting === 'no'), 'naming the shutdown (accepting: no), not a backend')
  t.ok((notReady[0]?.at ?? Infinity) < SHUTDOWN_DELAY_MS / 2, `503 within ${Math.round(notReady[0]?.at ?? -1)} ms of the signal`)
  t.comment(`readiness after the signal: ${readiness.map((r) => `${Math.round(r.at)}ms:${r.status ?? r.error ?? '?'}`).join(' ')}`)
  t.ok((notReady.at(-1)?.at ?? 0) >= SHUTDOWN_DELAY_MS / 2, `still 503 late in the delay window (last at ${Math.round(notReady.at(-1)?.at ?? 0)} ms)`)
  t.same(readiness.slice(firstNotReady).filter((r) => r.status === 200), [], 'never ready again once 503')
  t.ok(readiness.slice(firstNotReady).every((r) => r.status === 503 || (r.status === undefined && REFUSED_OR_RESET.has(r.error ?? ''))),
    'after that: 503 or refused')

  // The requests.
  const answered = outcomes.filter((o) => o.answered)
  const unanswered = outcomes.filter((o) => !o.answered)
  const wrong = answered.map((o) => ({ o, why: wrongness(o) })).filter((w) => w.why !== undefined)
  t.same(wrong.slice(0, 5).map((w) => `${w.o.operation} at ${Math.round(w.o.sentAt - signalAt)} ms: ${w.why}`), [],
    `every answered request got a whole, correct answer (${answered.length} answered)`)
  t.ok(answeredBeforeSignal >= CLIENTS, `under load before the signal (${answeredBeforeSignal} answered)`)
  const servedWhileDraining = answered.filter((o) => o.sentAt > signalAt)
  t.ok(servedWhileDraining.length >= CLIENTS, `requests sent after the signal were still served during the delay (${servedWhileDraining.length})`)
  t.ok(answered.some((o) => o.operation === 'login' && o.sentAt > signalAt), 'Logins too')
  const inFlightAtClose = answered.filter((o) => o.sentAt < signalAt + SHUTDOWN_DELAY_MS && o.endedAt > signalAt + SHUTDOWN_DELAY_MS)
  t.ok(inFlightAtClose.length > 0, `requests in flight when the listener closed finished (${inFlightAtClose.length})`)
  t.same(unanswered.filter((o) => o.sentAt < signalAt).map((o) => o.error), [], 'no failure before the signal')
  t.same([...new Set(unanswered.map((o) => o.error))].filter((e) => !REFUSED_OR_RESET.has(e ?? '')), [],
    `the unanswered ones failed at the connection: ${[...new Set(unanswered.map((o) => o.error))].join(', ') || 'none'} (${unanswered.length})`)
  t.ok(unanswered.some((o) => o.error === 'ECONNREFUSED'), 'once closed, new connections are refused')
  // The service's side: the access log has a line for each answered request and none for an unanswered one.
  const logged = new Set<string>()
  for (const line of service.output().split('\n')) {
    const record = jsonObject(line)
    if (record?.msg === 'request completed' && typeof record.reqId === 'string') logged.add(record.reqId)
  }
  t.same(answered.filter((o) => !logged.has(o.id)).map((o) => o.id), [], 'every answered request is in the access log')
  t.same(unanswered.filter((o) => logged.has(o.id)).map((o) => `${o.id}: ${o.error}`), [],
    'no unanswered request reached a handler: those that failed were never accepted')

  // A restart on the same Redis: every token issued before is still active.
  const tokens = new Set([firstToken])
  for (const o of answered) {
    const token = o.operation === 'login' ? jsonObject(o.body ?? '')?.token : undefined
    if (typeof token === 'string') tokens.add(token)
  }
  t.ok(tokens.size > 1, `tokens issued under load (${tokens.size})`)
  const restarted = await startService(t, { ...env, SHUTDOWN_DELAY_MS: '0' }, { cwd })
  const checks = await Promise.all([...tokens].map(async (token) => await send(false, `${restarted.baseUrl}/auth/Authenticate/${token}`, 'GET', 'authenticate')))
  t.same(checks.map(wrongness).filter((w) => w !== undefined), [], `all ${tokens.size} tokens still active after the restart`)
  restarted.kill('SIGTERM')
  t.equal((await restarted.exited).code, 0)
})

t.test('a second SIGINT while closing (a terminal\'s Ctrl-C and npm\'s copy of it): the Login in flight finishes, closed, exit 0', async (t) => {
  const env = {
    DATABASE_URL: await migratedDatabaseUrl(t),
    REDIS_URL: await requireRedis(),
    AUTH_REDIS_KEY_PREFIX: await freshRedisPrefix(t),
    AUTH_BOOTSTRAP_USERNAME: USERNAME,
    AUTH_BOOTSTRAP_PASSWORD: PASSWORD,
    SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
    LOG_LEVEL: 'info'
  }
  const service = await startService(t, env, { cwd: await tempDir(t, 'ats-shutdown-twice-') })
  const login = await holdLogin(service.port, USERNAME, PASSWORD)
  t.ok(service.kill('SIGINT'), 'the first SIGINT')
  await service.outputMatching(/closing: readiness now answers 503/)
  t.ok(service.kill('SIGINT'), 'a second one while closing')
  await service.outputMatching(/closing already/)
  const answer = await login.finish()
  t.equal(answer.status, 200, 'the Login in flight at both signals is answered')
  t.match(jsonObject(answer.body)?.token, TOKEN, 'with a token')
  const { code } = await service.exited
  t.equal(code, 0, 'the process exits 0')
  t.match(service.output(), /"msg":"closing already[^"]*SIGKILL/, 'the second signal is said to change nothing, once, naming what does stop it at once')
  t.equal(service.output().match(/closing already/g)?.length, 1, 'said once')
  t.match(service.output(), /"msg":"closed"/, 'closed in order')
})
