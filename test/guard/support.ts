import fastifyFormbody from '@fastify/formbody'
import { encodeRecord, keyLayout, revocationChannel, type TokenRecord } from '@auth-token-service/protocol/layout'
import Fastify, { type FastifyInstance } from 'fastify'
import { Redis, type RedisKey } from 'ioredis'
import type { AddressInfo } from 'node:net'
import { setImmediate as turn, setTimeout as sleep } from 'node:timers/promises'
import type { Test } from 'tap'
import { createAuthClient, type AuthClient } from '@auth-token-service/guard/client'
import { authTokenGuard, type AuthTokenGuardOptions } from '@auth-token-service/guard'
import { buildInternalApp } from '../../src/app/internal-listener.js'
import type { Config } from '../../src/config/config.js'
import type { RedisTopology } from '../../src/core/stores/redis/client.js'
import { hashToken } from '@auth-token-service/protocol/token'
import { buildTestApp, type BackendKind, type TestApp } from '../support/app.js'
import { waitFor } from '../../support/processes.js'
import { freshRedisPrefix, requireRedis } from '../../support/redis.js'

/**
 * A real token service listening on a port (Postgres + a Redis prefix of its own),
 * and services protected by the guard in either mode, for the guard's tests.
 */

export const USER = { username: 'ann', password: 'correct horse battery staple' }

export interface RunningService extends TestApp {
  baseUrl: string
  authenticateUrl: string
  redisUrl: string
  /** The service's Redis key prefix (direct-mode guards must use the same). */
  keyPrefix: string
  client: AuthClient
  /** Logs USER in through the service's HTTP Login; returns the token. */
  login (): Promise<string>
  /** Ends the token through the service's HTTP Logout. */
  logout (token: string): Promise<void>
  /** A connection of the test's own to the shared Redis (for the key, the channel and CLIENT LIST/KILL). */
  admin: Redis
}

/** The service on the shared Redis, or on the given topology (a throwaway Cluster or Sentinel setup). */
export async function startTokenService (t: Test, overrides: Partial<Config> = {}, redis?: RedisTopology): Promise<RunningService> {
  // The HTTP mode's cache follows the feed at the service's own origin by default: served there
  // when AUTH_PUBLIC_INTERNALS asks, and without a key only on a loopback-only port.
  const service = await buildTestApp(t, 'real', { host: '127.0.0.1', publicInternals: true, ...overrides }, redis === undefined ? {} : { redis })
  await service.addUser(USER.username, USER.password)
  await service.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = service.app.server.address() as AddressInfo
  const baseUrl = `http://127.0.0.1:${port}`
  const client = createAuthClient({ baseUrl })
  const redisUrl = await requireRedis()
  const admin = new Redis(redisUrl)
  t.teardown(async () => { await admin.quit() })
  return {
    ...service,
    baseUrl,
    authenticateUrl: `${baseUrl}/auth/Authenticate`,
    redisUrl,
    keyPrefix: service.redisPrefix as string,
    client,
    admin,
    async login () {
      const result = await client.login(USER.username, USER.password)
      if (!result.ok) throw new Error(`login failed: ${JSON.stringify(result.error)}`)
      return result.token
    },
    async logout (token) {
      const result = await client.logout(token)
      if (!result.ok) throw new Error(`logout failed: ${JSON.stringify(result.error)}`)
    }
  }
}

export type GuardMode = 'direct' | 'http'
export const MODES: readonly GuardMode[] = ['direct', 'http']

/** Counts the verifications that reached the token service's side (not the cache). */
export interface VerificationCounter {
  count (): number
}

/** Guard options for the mode, with a counter of the verifications that left the guard. */
export function guardOptions (
  t: Test, service: RunningService, mode: GuardMode, extra: Partial<AuthTokenGuardOptions> = {}
): { options: AuthTokenGuardOptions, verifications: VerificationCounter } {
  if (mode === 'http') return httpGuardOptions(service.authenticateUrl, extra)
  let count = 0
  const verifications = { count: () => count }
  // A handed-in client whose GETs are counted (the guard's one round trip per verification).
  const redis = new Redis(service.redisUrl)
  t.teardown(() => { redis.disconnect() })
  const get = redis.get.bind(redis)
  redis.get = (async (key: RedisKey) => { count++; return await get(key) }) as unknown as Redis['get']
  return { options: { redis, keyPrefix: service.keyPrefix, ...extra }, verifications }
}

/** HTTP mode's options against `authenticateUrl`, with a counter of the Authenticate requests sent. */
export function httpGuardOptions (authenticateUrl: string, extra: Partial<AuthTokenGuardOptions> = {}): { options: AuthTokenGuardOptions, verifications: VerificationCounter } {
  let count = 0
  const counting: typeof fetch = async (input, init) => {
    if (String(input).includes('/auth/Authenticate')) count++
    return await fetch(input, init)
  }
  return { options: { authenticateUrl, fetch: counting, ...extra }, verifications: { count: () => count } }
}

export interface GuardedApp {
  app: FastifyInstance
  /** GET /whoami with the token as a query parameter: the HTTP status. */
  status (token: string): Promise<number>
}

/**
 * A small service: `/open` outside the guard; in the guarded scope `/whoami` (returns
 * request.auth), `/things/:token` (a path parameter), `POST /things` (a body schema) and
 * whatever `routes` adds there.
 */
export async function buildGuardedApp (t: Test, options: AuthTokenGuardOptions, routes?: (scope: FastifyInstance) => void): Promise<GuardedApp> {
  const app = Fastify({ logger: false })
  await app.register(fastifyFormbody)
  app.get('/open', async (request) => ({ open: true, auth: request.auth ?? null }))
  await app.register(async (scope) => {
    await scope.register(authTokenGuard, options)
    scope.get('/whoami', async (request) => ({ auth: request.auth }))
    scope.get('/things/:token', async (request) => ({ auth: request.auth }))
    scope.post('/things', {
      schema: {
        body: {
          type: 'object',
          required: ['name'],
          properties: { name: { type: 'string', minLength: 1 }, token: { type: 'string' } }
        }
      }
    }, async (request) => ({ auth: request.auth }))
    routes?.(scope)
  })
  t.teardown(async () => { await app.close() })
  await app.ready()
  return {
    app,
    async status (token) {
      return (await app.inject({ method: 'GET', url: '/whoami', query: { token } })).statusCode
    }
  }
}

/** Polls until the guard refuses the token; returns the milliseconds it took from `since`. */
/**
 * How long after its revocation a cached token may still pass, in the fast suite. The feed's
 * promise is 1 s (api-contract), a duration: the timing set judges it
 * (test/integration/timing/guard-revocation.test.ts), one file at a time. Here the subject is that
 * the feed ended the token and not the cache's expiry (the tests' ttlMs is 60 s), with a margin a
 * loaded machine does not reach: the figures are printed (1.4 s seen at a load of 14-18).
 */
export const FEED_NOT_TTL_MS = 20_000

export async function untilRefused (guarded: GuardedApp, token: string, since: number, limitMs = FEED_NOT_TTL_MS): Promise<number> {
  for (;;) {
    const status = await guarded.status(token)
    if (status === 403) return performance.now() - since
    if (performance.now() - since > limitMs) throw new Error(`still answered ${status} after ${limitMs} ms`)
    await sleep(2)
  }
}

/** The ids of the Redis connections named `<prefix>revoked-watcher` (the revocation feeds). */
export async function watcherIds (admin: Redis, keyPrefix: string): Promise<string[]> {
  const list = await admin.client('LIST') as string
  return list.split('\n')
    .filter((line) => line.includes(` name=${keyPrefix}revoked-watcher `))
    .map((line) => /\bid=(\d+)/.exec(line)?.[1])
    .filter((id): id is string => id !== undefined)
}

/** Waits until `check` holds, polling (support/processes.ts waitFor, at the guard's pace). */
export async function eventually (check: () => Promise<boolean> | boolean, limitMs = 5000, what = 'condition'): Promise<void> {
  await waitFor(what, check, { timeoutMs: limitMs, everyMs: 10 })
}

/**
 * Asks until an answer comes from the cache (a pass with no verification leaving the
 * guard): the cache is warm for the token, which also means its revocation feed is live.
 */
export async function warm (guarded: GuardedApp, verifications: VerificationCounter, token: string, limitMs = 5000): Promise<void> {
  await eventually(async () => {
    const before = verifications.count()
    const status = await guarded.status(token)
    if (status !== 200) throw new Error(`warming answered ${status}`)
    return verifications.count() === before
  }, limitMs, 'a cache hit')
}

/** The token's key in the service's Redis. */
export function tokenKey (service: RunningService, token: string): string {
  return keyLayout(service.keyPrefix).tokenKey(hashToken(token))
}

/** GET /whoami with the token as Bearer: the status and, on a pass, request.auth.groups. */
export async function whoami (guarded: GuardedApp, token: string): Promise<{ status: number, groups: unknown }> {
  const answer = await guarded.app.inject({ method: 'GET', url: '/whoami', headers: { authorization: `Bearer ${token}` } })
  return { status: answer.statusCode, groups: answer.statusCode === 200 ? answer.json<{ auth: { groups: unknown } }>().auth.groups : undefined }
}

export interface SeededRedis {
  redis: Redis
  keyPrefix: string
  verifications: VerificationCounter
  /** Writes the token's record as the service would (encodeRecord, PX its life). */
  seed (token: string, record: Partial<TokenRecord>): Promise<void>
  /** Rewrites a live record keeping its expiry, and publishes its hash: what the service does on a membership change. */
  regroup (token: string, groups: readonly string[]): Promise<void>
}

/**
 * Direct mode without the service: a key prefix of the test's own on the shared Redis, a counted
 * client to hand the guard, and records written as the service writes them.
 */
export async function seededRedis (t: Test): Promise<SeededRedis> {
  const url = await requireRedis()
  const keyPrefix = await freshRedisPrefix(t)
  let count = 0
  const redis = new Redis(url)
  t.teardown(() => { redis.disconnect() })
  const get = redis.get.bind(redis)
  redis.get = (async (key: RedisKey) => { count++; return await get(key) }) as unknown as Redis['get']
  const writer = new Redis(url)
  t.teardown(() => { writer.disconnect() })
  const layout = keyLayout(keyPrefix)
  const records = new Map<string, TokenRecord>()
  return {
    redis,
    keyPrefix,
    verifications: { count: () => count },
    async seed (token, fields) {
      const record: TokenRecord = { accountId: '7', username: 'ann', federated: false, expiresAt: Date.now() + 3600_000, ...fields }
      records.set(token, record)
      await writer.set(layout.tokenKey(hashToken(token)), encodeRecord(record), 'PX', 3600_000)
    },
    async regroup (token, groups) {
      const record = records.get(token)
      if (record === undefined) throw new Error('not seeded')
      const next = { ...record, groups }
      records.set(token, next)
      t.equal(await writer.set(layout.tokenKey(hashToken(token)), encodeRecord(next), 'KEEPTTL', 'XX'), 'OK', 'the live record rewritten')
      await writer.publish(revocationChannel(keyPrefix), hashToken(token))
    }
  }
}

/**
 * Asks until `/whoami` shows `groups` (a membership change, announced as the service does); returns
 * the milliseconds from `since`. Every answer on the way must be a pass (the published hash
 * is no refusal) and, once the new set is seen, no answer may show an older one.
 */
export async function untilGroups (t: Test, guarded: GuardedApp, token: string, groups: readonly string[], since: number, limitMs = FEED_NOT_TTL_MS): Promise<number> {
  let seenAt: number | undefined
  const refusals: number[] = []
  for (;;) {
    const answer = await whoami(guarded, token)
    if (answer.status !== 200) refusals.push(answer.status)
    const fresh = JSON.stringify(answer.groups) === JSON.stringify(groups)
    if (fresh) seenAt ??= performance.now() - since
    else if (seenAt !== undefined) t.fail(`an older set came back after the new one: ${JSON.stringify(answer.groups)}`)
    // A few more asks after the first fresh answer: the cache must now hold the new set.
    if (seenAt !== undefined && performance.now() - since > seenAt + 50) break
    if (performance.now() - since > limitMs) throw new Error(`still ${JSON.stringify(answer.groups)} after ${limitMs} ms`)
    // inject() never waits on I/O: without a pause the feed's socket would not be read.
    await sleep(2)
  }
  t.same(refusals, [], 'never refused on the way: a published hash drops the cached answer, nothing more')
  return seenAt
}

/** The admin key of the services a membership change is made on. */
const ADMIN_KEY = 'admin-key-for-guard-tests-0123456789-abcdef'

/** A real service whose USER's groups an operator changes through the admin API, and a guard's options for each mode it serves. */
export interface GroupsService {
  /** Logs USER in through the service's HTTP Login; returns the token. */
  login (): Promise<string>
  /**
   * `PUT /admin/users/{USER}/groups` on the internal listener with the admin key, as an operator
   * sends it: resolves once the service acknowledged the change (200), throws on any other answer.
   */
  setGroups (groups: readonly string[]): Promise<void>
  /** As guardOptions; the embedded kind has no Redis to share, so HTTP mode only. */
  guardOptions (mode: GuardMode, extra?: Partial<AuthTokenGuardOptions>): { options: AuthTokenGuardOptions, verifications: VerificationCounter }
}

/**
 * The service listening, of either kind: 'real' as startTokenService, 'embedded' (PGlite and the
 * in-process store, whose feed the same origin serves) for HTTP mode; with its internal app for
 * the admin API.
 */
export async function startGroupsService (t: Test, kind: BackendKind): Promise<GroupsService> {
  let service: TestApp
  let guard: GroupsService['guardOptions']
  if (kind === 'real') {
    const running = await startTokenService(t, { adminKey: ADMIN_KEY })
    service = running
    guard = (mode, extra) => guardOptions(t, running, mode, extra)
  } else {
    service = await buildTestApp(t, 'embedded', { host: '127.0.0.1', publicInternals: true, adminKey: ADMIN_KEY })
    await service.addUser(USER.username, USER.password)
    await service.app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = service.app.server.address() as AddressInfo
    guard = (mode, extra) => {
      if (mode === 'direct') throw new Error('the embedded kind has no Redis for direct mode')
      return httpGuardOptions(`http://127.0.0.1:${port}/auth/Authenticate`, extra)
    }
  }
  const internal = await buildInternalApp(service.app, service.config)
  t.teardown(async () => { await internal.close() })
  const { port } = service.app.server.address() as AddressInfo
  const client = createAuthClient({ baseUrl: `http://127.0.0.1:${port}` })
  return {
    async login () {
      const result = await client.login(USER.username, USER.password)
      if (!result.ok) throw new Error(`login failed: ${JSON.stringify(result.error)}`)
      return result.token
    },
    async setGroups (groups) {
      const answer = await internal.inject({
        method: 'PUT',
        url: `/admin/users/${USER.username}/groups`,
        headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ groups })
      })
      if (answer.statusCode !== 200) throw new Error(`PUT groups answered ${answer.statusCode}: ${answer.body}`)
    },
    guardOptions: guard
  }
}

/** `GET /ops` in the guarded scope, ruled to members of ops. */
export function opsRoute (scope: FastifyInstance): void {
  scope.get('/ops', { config: { authTokenGuard: { groups: ['ops'] } } }, async (request) => ({ auth: request.auth }))
}

/** GET /ops with the token as Bearer: the HTTP status. */
export async function opsStatus (guarded: GuardedApp, token: string): Promise<number> {
  return (await guarded.app.inject({ method: 'GET', url: '/ops', headers: { authorization: `Bearer ${token}` } })).statusCode
}

/** One answer of `/ops`, on the monotonic clock. */
export interface OpsAnswer { startedAt: number, endedAt: number, status: number }

/** What a guard answered on `/ops` through a membership change. */
export interface ChangeSeen {
  /** The answer the change leads to: 403 for a removal from ops, 200 for an addition. */
  want: number
  answers: readonly OpsAnswer[]
  /** Monotonic instants: the change sent, and its acknowledgement (the PUT's 200). */
  sentAt: number
  ackedAt: number
  /** The last answer other than `want` ended this many ms after the ack (negative: before it); undefined when there was none. */
  lastOldAfterAckMs: number | undefined
  /** The first `want` answer ended this many ms after the ack (negative: before it). */
  firstNewAfterAckMs: number
  /** Answers other than `want` after the first `want` (a guard that went back to the old set). */
  backslid: number
}

/**
 * Asks `GET /ops` over and over, one request at a time, while `change` runs (a hot cached answer)
 * and until the change is acknowledged and answered `want`, and 50 ms more. A `change` that
 * returns at once (the PUT already made) times from the asking's start. Throws past `limitMs`.
 */
export async function askThroughChange (guarded: GuardedApp, token: string, change: () => Promise<void>, want: number, limitMs = FEED_NOT_TTL_MS): Promise<ChangeSeen> {
  const answers: OpsAnswer[] = []
  const sentAt = performance.now()
  let ackedAt: number | undefined
  let failure: { error: unknown } | undefined
  const changing = change().then(() => { ackedAt = performance.now() }, (error: unknown) => { failure = { error } })
  let firstNew: number | undefined
  for (;;) {
    const startedAt = performance.now()
    const status = await opsStatus(guarded, token)
    const endedAt = performance.now()
    answers.push({ startedAt, endedAt, status })
    if (failure !== undefined) throw failure.error
    if (status === want && firstNew === undefined) firstNew = answers.length - 1
    if (ackedAt !== undefined && firstNew !== undefined && endedAt > Math.max(ackedAt, answers[firstNew]?.endedAt ?? 0) + 50) break
    if (endedAt - sentAt > limitMs) throw new Error(`still answered ${status} ${(endedAt - sentAt).toFixed(0)} ms after the change was sent (acknowledged: ${String(ackedAt !== undefined)})`)
    // Once round the event loop (inject() never waits on I/O): the feed's socket is read, and no more.
    await turn()
  }
  await changing
  const acked = ackedAt as number
  const lastOld = answers.findLast((answer) => answer.status !== want)
  return {
    want,
    answers,
    sentAt,
    ackedAt: acked,
    lastOldAfterAckMs: lastOld === undefined ? undefined : lastOld.endedAt - acked,
    firstNewAfterAckMs: (answers[firstNew] as OpsAnswer).endedAt - acked,
    backslid: answers.slice(firstNew).filter((answer) => answer.status !== want).length
  }
}

/**
 * The change's judgement: only passes and the rule's refusals on the way, never the old answer
 * once the new one came, and none ended more than `boundMs` after the acknowledgement.
 */
export function judgeChange (t: Test, seen: ChangeSeen, boundMs: number, what: string): void {
  t.same([...new Set(seen.answers.map((answer) => answer.status))].filter((status) => status !== 200 && status !== 403), [], `${what}: every answer a pass or the rule's 403`)
  t.equal(seen.backslid, 0, `${what}: once answered ${seen.want}, never the old answer again`)
  t.ok((seen.lastOldAfterAckMs ?? -Infinity) <= boundMs, `${what}: no old answer later than ${boundMs} ms after the acknowledgement (${describeChange(seen)})`)
}

/** The change's figures, for a comment. */
export function describeChange (seen: ChangeSeen): string {
  const ms = (value: number | undefined): string => value === undefined ? 'none' : `${value.toFixed(1)} ms`
  return `PUT ${ms(seen.ackedAt - seen.sentAt)}, ${seen.answers.length} answers; from the ack: last old answer ${ms(seen.lastOldAfterAckMs)}, first new ${ms(seen.firstNewAfterAckMs)}`
}
