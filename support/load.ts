import { Agent, request as httpRequest } from 'node:http'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateToken } from '@auth-token-service/protocol/token'

/**
 * Real HTTP load for the fault tests: keep-alive connections, every request's latency
 * and answer recorded, and a book of the tokens issued so each answer can be judged
 * against what the contract allows for that token at that moment.
 */

export type Operation = 'login' | 'authenticate' | 'logout' | 'live'

export interface Outcome {
  op: Operation
  /** performance.now() when the request was sent and when its answer (or failure) was complete. */
  startedAt: number
  endedAt: number
  /** The HTTP status; 0 when no response headers arrived. */
  httpStatus: number
  /** Response headers arrived; `complete`: the whole body too. */
  answered: boolean
  complete: boolean
  text: string
  body: unknown
  error?: string
  token?: string
}

export const latencyOf = (outcome: Outcome): number => outcome.endedAt - outcome.startedAt

/** The contract's bodies, exactly. */
export const UNAVAILABLE = Object.freeze({ status: 503, message: 'Service Unavailable' })
export const UNAUTHORIZED = Object.freeze({ status: 403, message: 'Unauthorized' })
export const LOGIN_FAILED = Object.freeze({ status: 701, message: 'Login Failed' })

/** A token the service never issued, shaped like one (so it does reach Redis). */
export const strangerToken = (): string => generateToken(String(Math.random()))

export interface RequestOptions {
  form?: Record<string, string>
  timeoutMs?: number
}

/** A keep-alive HTTP client that never throws: every request ends as an Outcome. */
export class HttpDriver {
  readonly agent: Agent
  readonly baseUrl: URL
  readonly timeoutMs: number

  constructor (baseUrl: string, options: { maxSockets?: number, timeoutMs?: number, keepAlive?: boolean } = {}) {
    this.baseUrl = new URL(baseUrl)
    this.timeoutMs = options.timeoutMs ?? 5000
    this.agent = new Agent({ keepAlive: options.keepAlive ?? true, maxSockets: options.maxSockets ?? 16, keepAliveMsecs: 1000 })
  }

  async request (op: Operation, method: 'GET' | 'POST', path: string, options: RequestOptions = {}): Promise<Outcome> {
    const body = options.form === undefined ? undefined : new URLSearchParams(options.form).toString()
    const timeoutMs = options.timeoutMs ?? this.timeoutMs
    const startedAt = performance.now()
    return await new Promise<Outcome>((resolve) => {
      let settled = false
      let httpStatus = 0
      let answered = false
      const chunks: Buffer[] = []
      const finish = (complete: boolean, error?: string): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        const text = Buffer.concat(chunks).toString('utf8')
        let parsed: unknown
        try { parsed = complete ? JSON.parse(text) : undefined } catch { parsed = undefined }
        resolve({ op, startedAt, endedAt: performance.now(), httpStatus, answered, complete, text, body: parsed, ...(error === undefined ? {} : { error }) })
      }
      const req = httpRequest({
        agent: this.agent,
        host: this.baseUrl.hostname,
        port: this.baseUrl.port,
        method,
        path,
        headers: body === undefined
          ? {}
          : { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) }
      }, (res) => {
        answered = true
        httpStatus = res.statusCode ?? 0
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => { finish(true) })
        res.on('aborted', () => { finish(false, 'response aborted') })
        res.on('error', (error) => { finish(false, error.message) })
        res.on('close', () => { finish(res.complete, res.complete ? undefined : 'closed before the end of the body') })
      })
      const timer = setTimeout(() => {
        req.destroy(new Error(`no complete answer within ${timeoutMs} ms`))
      }, timeoutMs)
      req.on('error', (error: NodeJS.ErrnoException) => { finish(false, error.code ?? error.message) })
      req.end(body)
    })
  }

  async login (username: string, password: string, token?: string, timeoutMs?: number): Promise<Outcome> {
    const form: Record<string, string> = { username, password }
    if (token !== undefined) form.token = token
    return await this.request('login', 'POST', '/auth/Login', { form, timeoutMs })
  }

  async authenticate (token: string): Promise<Outcome> {
    return { ...await this.request('authenticate', 'GET', `/auth/Authenticate/${token}`), token }
  }

  async logout (token: string): Promise<Outcome> {
    return { ...await this.request('logout', 'POST', `/auth/Logout/${token}`), token }
  }

  async live (): Promise<Outcome> {
    return await this.request('live', 'GET', '/health/live')
  }

  close (): void {
    this.agent.destroy()
  }
}

/** The token of a successful Login, else undefined. */
export function issuedToken (outcome: Outcome): string | undefined {
  if (outcome.httpStatus !== 200 || !isRecord(outcome.body) || outcome.body.status !== 0) return undefined
  return typeof outcome.body.token === 'string' ? outcome.body.token : undefined
}

export function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null
}

export type Verdict = 'success' | 'unauthorized' | 'unavailable' | 'login-failed' | 'too-many' | 'no-answer' | 'malformed'

/**
 * What an answer was, by the contract's table: HTTP status and body must agree, and an
 * error body must be exactly the contract's object. Anything else (500, a truncated
 * body, a Fastify default error) is 'malformed'.
 */
export function verdictOf (outcome: Outcome): Verdict {
  if (!outcome.answered) return 'no-answer'
  if (!outcome.complete || !isRecord(outcome.body)) return 'malformed'
  const body = outcome.body
  const exactly = (expected: { status: number, message: string }): boolean =>
    Object.keys(body).length === 2 && body.status === expected.status && body.message === expected.message
  switch (outcome.httpStatus) {
    case 200:
      if (body.status !== 0 || body.message !== 'Success') return 'malformed'
      if (outcome.op === 'login' && (typeof body.token !== 'string' || body.token !== body.AuthToken)) return 'malformed'
      if (outcome.op === 'authenticate' && typeof body.expiration_date !== 'string') return 'malformed'
      return 'success'
    case 403: return exactly(UNAUTHORIZED) ? 'unauthorized' : 'malformed'
    case 503: return exactly(UNAVAILABLE) ? 'unavailable' : 'malformed'
    case 401: return outcome.op === 'login' && exactly(LOGIN_FAILED) ? 'login-failed' : 'malformed'
    case 429: return outcome.op === 'login' && body.status === 429 ? 'too-many' : 'malformed'
    default: return 'malformed'
  }
}

export function describe (outcome: Outcome, origin = 0): string {
  const at = (outcome.startedAt - origin).toFixed(0)
  return `${outcome.op} at +${at} ms: HTTP ${outcome.httpStatus} in ${latencyOf(outcome).toFixed(0)} ms ${outcome.error ?? outcome.text.slice(0, 120)}`
}

export function percentile (values: number[], p: number): number {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil(p / 100 * sorted.length) - 1)] ?? 0
}

// ---------------------------------------------------------------- the token book

/**
 * 'active': Redis holds it; 'ended': a Logout said so (or Redis lost it); 'unknown': a
 * Logout that got no clear answer may or may not have ended it.
 */
export type TokenState = 'active' | 'ended' | 'unknown'

interface Entry {
  state: TokenState
  /** Handed to a Logout of the load: no second Logout will take it. */
  claimed: boolean
  /** Ended by a data-losing Redis restart rather than a Logout. */
  lost: boolean
}

export class TokenBook {
  readonly entries = new Map<string, Entry>()

  add (token: string, state: TokenState = 'active'): void {
    this.entries.set(token, { state, claimed: false, lost: false })
  }

  state (token: string): TokenState | undefined {
    return this.entries.get(token)?.state
  }

  set (token: string, state: TokenState): void {
    const entry = this.entries.get(token)
    if (entry !== undefined) entry.state = state
  }

  /** A Logout was sent for it at some point (its state may change under a concurrent request). */
  isClaimed (token: string): boolean {
    return this.entries.get(token)?.claimed ?? false
  }

  isLost (token: string): boolean {
    return this.entries.get(token)?.lost ?? false
  }

  /** Redis came back without its data: nothing issued so far is active any more. */
  loseAll (): void {
    for (const entry of this.entries.values()) {
      if (entry.state !== 'ended') entry.lost = true
      entry.state = 'ended'
    }
  }

  /** An active, unclaimed token, now claimed (for a Logout); undefined when none is left. */
  claim (filter: (token: string) => boolean = () => true): string | undefined {
    const candidates: string[] = []
    for (const [token, entry] of this.entries) {
      if (!entry.claimed && entry.state === 'active' && filter(token)) candidates.push(token)
    }
    const token = candidates[Math.floor(Math.random() * candidates.length)]
    if (token === undefined) return undefined
    const entry = this.entries.get(token)
    if (entry !== undefined) entry.claimed = true
    return token
  }

  random (): string | undefined {
    const tokens = [...this.entries.keys()]
    return tokens[Math.floor(Math.random() * tokens.length)]
  }

  tokens (state?: TokenState): string[] {
    return [...this.entries].filter(([, entry]) => state === undefined || entry.state === state).map(([token]) => token)
  }
}

// ---------------------------------------------------------------- mixed load

export interface MixedLoadOptions {
  driver: HttpDriver
  book: TokenBook
  username: string
  password: string
  workers: number
  /** Weights of Authenticate, Login and Logout. */
  mix: { authenticate: number, login: number, logout: number }
  /** Tokens Logouts of the load must leave alone (kept to check after the fault). */
  keep?: ReadonlySet<string>
  /** Pause after a request that got no answer at all (the service is down). */
  backoffMs?: number
  /** Pause between a worker's requests (keeps a 2-core machine from saturating). */
  thinkMs?: number
  /** Logins in flight at once, at most (a worker that would exceed it authenticates instead). */
  maxConcurrentLogins?: number
}

/** A problem with one answer, judged when it arrived. */
export interface Violation {
  outcome: Outcome
  reason: string
}

export interface RunningLoad {
  readonly outcomes: Outcome[]
  readonly violations: Violation[]
  stop (): Promise<void>
}

/**
 * Workers that loop Authenticate / Login / Logout until stopped. Each answer is judged
 * against the book at once: an ended token never authenticates, an active one never
 * gets a 403, a Logout of an active token is 0 (or 503), a token is 0 only once.
 * 503s are judged by the caller against its fault windows.
 */
export function startMixedLoad (options: MixedLoadOptions): RunningLoad {
  const { driver, book } = options
  const outcomes: Outcome[] = []
  const violations: Violation[] = []
  const total = options.mix.authenticate + options.mix.login + options.mix.logout
  let stopped = false
  let loginsInFlight = 0

  const flag = (outcome: Outcome, reason: string): void => { violations.push({ outcome, reason }) }

  async function authenticate (): Promise<Outcome> {
    const known = Math.random() < 0.9 ? book.random() : undefined
    const token = known ?? strangerToken()
    const before = known === undefined ? 'ended' : book.state(token)
    const outcome = await driver.authenticate(token)
    const after = known === undefined ? 'ended' : book.state(token)
    const verdict = verdictOf(outcome)
    if (verdict === 'success' && before === 'ended') flag(outcome, `an ended token authenticated (${before})`)
    // A token no Logout ever took, active before and after: the answer can only be 0 (or 503).
    if (verdict === 'unauthorized' && before === 'active' && after === 'active' && !book.isClaimed(token)) flag(outcome, 'an active token was refused')
    if (!['success', 'unauthorized', 'unavailable', 'no-answer'].includes(verdict)) flag(outcome, `not an Authenticate answer: ${verdict}`)
    return outcome
  }

  async function login (): Promise<Outcome> {
    const outcome = await driver.login(options.username, options.password)
    const verdict = verdictOf(outcome)
    const token = issuedToken(outcome)
    if (verdict === 'success' && token !== undefined) {
      if (book.state(token) !== undefined) flag(outcome, 'a Login returned a token issued before')
      book.add(token)
    } else if (!['unavailable', 'no-answer'].includes(verdict)) {
      flag(outcome, `not a Login answer under load: ${verdict}`)
    }
    return outcome
  }

  async function logout (): Promise<Outcome> {
    const token = book.claim((candidate) => options.keep?.has(candidate) !== true)
    if (token === undefined) {
      // None of ours left to end: a token nobody was issued still goes through Redis, and must not end anything.
      const outcome = await driver.logout(strangerToken())
      const verdict = verdictOf(outcome)
      if (!['unauthorized', 'unavailable', 'no-answer'].includes(verdict)) flag(outcome, `a Logout of a token never issued answered ${verdict}`)
      return outcome
    }
    const outcome = await driver.logout(token)
    const verdict = verdictOf(outcome)
    if (verdict === 'success') {
      if (book.isLost(token)) flag(outcome, 'a token Redis lost was logged out')
      book.set(token, 'ended')
    } else if (verdict === 'unauthorized') {
      if (!book.isLost(token) && book.state(token) === 'active') flag(outcome, 'a Logout of an active token was refused')
      book.set(token, 'ended')
    } else if (verdict === 'unavailable' || verdict === 'no-answer') {
      // It may have run (the reply lost): from now on either answer is right.
      if (!book.isLost(token)) book.set(token, 'unknown')
    } else {
      flag(outcome, `not a Logout answer: ${verdict}`)
    }
    return outcome
  }

  async function worker (): Promise<void> {
    while (!stopped) {
      const pick = Math.random() * total
      let outcome: Outcome | undefined
      if (pick < options.mix.authenticate) {
        outcome = await authenticate()
      } else if (pick < options.mix.authenticate + options.mix.login) {
        if (loginsInFlight >= (options.maxConcurrentLogins ?? Infinity)) {
          outcome = await authenticate()
        } else {
          loginsInFlight++
          try { outcome = await login() } finally { loginsInFlight-- }
        }
      } else {
        outcome = await logout()
      }
      outcomes.push(outcome)
      if (!outcome.answered) await sleep(options.backoffMs ?? 20)
      else if ((options.thinkMs ?? 0) > 0) await sleep(options.thinkMs)
    }
  }

  const running = Promise.all(Array.from({ length: options.workers }, async () => { await worker() }))
  return {
    outcomes,
    violations,
    async stop () {
      stopped = true
      await running
    }
  }
}

/** GET /health/live every `everyMs` on a connection of its own: the event loop's pulse. */
export function startLiveProbe (baseUrl: string, everyMs = 100): RunningLoad {
  const driver = new HttpDriver(baseUrl, { maxSockets: 1, timeoutMs: 5000 })
  const outcomes: Outcome[] = []
  let stopped = false
  const running = (async () => {
    while (!stopped) {
      outcomes.push(await driver.live())
      await sleep(everyMs)
    }
  })()
  return {
    outcomes,
    violations: [],
    async stop () {
      stopped = true
      await running
      driver.close()
    }
  }
}
