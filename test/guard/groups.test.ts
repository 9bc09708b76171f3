import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { authTokenGuard } from '@auth-token-service/guard'
import { generateToken, hashToken } from '@auth-token-service/protocol/token'
import Fastify from 'fastify'
import { formatExpirationDate } from '../../src/core/time.js'
import { buildGuardedApp, FEED_NOT_TTL_MS, guardOptions, MODES, seededRedis, startTokenService, untilGroups, warm, whoami, type GuardedApp, type VerificationCounter } from './support.js'

/*
 * Groups in the guard: `request.auth.groups` in both modes, the per-route rule
 * (`config.authTokenGuard.groups`: 403 to an active token outside them, never 401), and a
 * membership change through a warm cache. The service announces a change as it announces a
 * revocation (the record rewritten, its hash published on `<prefix>revoked`): for a cache that is
 * "drop what you hold for it and ask again", never a refusal of a token whose record is still there.
 */

const UNAUTHORIZED = JSON.stringify({ status: 403, message: 'Unauthorized' })
const cache = { maxEntries: 100, ttlMs: 60_000 }
const HOUR_MS = 3600_000

/** `/ops` (ops or sre only) and `POST /ops` (ops only, a body schema, a hook of the route's own) in the guarded scope. */
function opsRoutes (ranOwnHook: string[]): (scope: FastifyInstance) => void {
  return (scope) => {
    scope.get('/ops', { config: { authTokenGuard: { groups: ['ops', 'sre'] } } }, async (request) => ({ auth: request.auth }))
    scope.post('/ops', {
      config: { authTokenGuard: { groups: ['ops'] } },
      preValidation: async (request) => { ranOwnHook.push(request.auth?.username ?? '') },
      schema: { body: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } }
    }, async (request) => ({ auth: request.auth }))
  }
}

async function opsStatus (guarded: GuardedApp, token: string): Promise<number> {
  return (await guarded.app.inject({ method: 'GET', url: '/ops', headers: { authorization: `Bearer ${token}` } })).statusCode
}

t.test('direct mode: request.auth.groups comes from the record', async (t) => {
  const redis = await seededRedis(t)
  const guarded = await buildGuardedApp(t, { redis: redis.redis, keyPrefix: redis.keyPrefix })
  const [grouped, none, key] = [generateToken('7'), generateToken('7'), generateToken('7')]
  await redis.seed(grouped, { groups: ['dev', 'ops'] })
  await redis.seed(none, {})
  await redis.seed(key, { keyId: 'k9', groups: ['ops'] })
  t.same(await whoami(guarded, grouped), { status: 200, groups: ['dev', 'ops'] })
  t.same(await whoami(guarded, none), { status: 200, groups: [] }, 'a record without groups (layout 2\'s bytes): []')
  const asKey = await guarded.app.inject({ method: 'GET', url: '/whoami', headers: { authorization: `Bearer ${key}` } })
  t.match(asKey.json(), { auth: { keyId: 'k9', groups: ['ops'] } }, 'an API key\'s record: its key id and its account\'s groups')
})

t.test('direct mode: the per-route rule', async (t) => {
  const redis = await seededRedis(t)
  const ranOwnHook: string[] = []
  const guarded = await buildGuardedApp(t, { redis: redis.redis, keyPrefix: redis.keyPrefix }, opsRoutes(ranOwnHook))
  const tokens = { ops: generateToken('7'), sre: generateToken('7'), dev: generateToken('7'), none: generateToken('7') }
  await redis.seed(tokens.ops, { groups: ['dev', 'ops'] })
  await redis.seed(tokens.sre, { groups: ['sre'] })
  await redis.seed(tokens.dev, { groups: ['dev'] })
  await redis.seed(tokens.none, {})

  t.equal(await opsStatus(guarded, tokens.ops), 200, 'in ops')
  t.equal(await opsStatus(guarded, tokens.sre), 200, 'in sre: one of the groups is enough')
  for (const token of [tokens.dev, tokens.none]) {
    const refused = await guarded.app.inject({ method: 'GET', url: '/ops', headers: { authorization: `Bearer ${token}` } })
    t.equal(refused.statusCode, 403, 'an active token outside the groups: 403')
    t.equal(refused.body, UNAUTHORIZED, 'the guard\'s own refusal')
    t.equal(refused.headers['cache-control'], 'no-store')
    t.notOk(refused.headers['www-authenticate'], 'no challenge: a sign-in would not help')
  }
  t.equal(await whoami(guarded, tokens.dev).then((answer) => answer.status), 200, 'the same token passes where there is no rule')
  t.equal((await guarded.app.inject({ method: 'HEAD', url: '/ops', headers: { authorization: `Bearer ${tokens.dev}` } })).statusCode, 403, 'HEAD of a ruled GET route too')
  t.equal((await guarded.app.inject({ method: 'HEAD', url: '/ops', headers: { authorization: `Bearer ${tokens.ops}` } })).statusCode, 200)
  t.equal((await guarded.app.inject({ method: 'GET', url: '/ops' })).statusCode, 401, 'no token: still 401')
  t.equal(await opsStatus(guarded, generateToken('7')), 403, 'an unknown token: 403')

  const post = async (token: string, payload: object): Promise<number> =>
    (await guarded.app.inject({ method: 'POST', url: '/ops', headers: { authorization: `Bearer ${token}` }, payload })).statusCode
  t.equal(await post(tokens.sre, {}), 403, 'the rule is checked before the route\'s schema: no 400 for one outside the groups')
  t.same(ranOwnHook, [], 'nor did the route\'s own preValidation hook run')
  t.equal(await post(tokens.ops, {}), 400, 'a member gets the schema\'s answer')
  t.equal(await post(tokens.ops, { name: 'x' }), 200)
  t.same(ranOwnHook, ['ann', 'ann'], 'and the route\'s own hook ran for the member, after the rule')
})

t.test('a rule no account could meet stops the start', async (t) => {
  const redis = await seededRedis(t)
  const rules: unknown[] = [[], ['Ops'], ['-ops'], ['ops', ''], 'ops', ['a'.repeat(65)]]
  for (const groups of rules) {
    const app = Fastify({ logger: false })
    await app.register(async (scope) => {
      await scope.register(authTokenGuard, { redis: redis.redis, keyPrefix: redis.keyPrefix })
      scope.get('/x', { config: { authTokenGuard: { groups: groups as string[] } } }, async () => ({}))
    }).ready().then(() => { t.fail(`${JSON.stringify(groups)} was taken`) }, (error: unknown) => {
      t.match(error, { name: 'TypeError', message: /auth-token-guard: GET \/x: / }, `${JSON.stringify(groups)}: refused`)
    })
    await app.close()
  }
})

t.test('direct mode: a membership change reaches a warm cache through the feed', async (t) => {
  const redis = await seededRedis(t)
  const guarded = await buildGuardedApp(t, { redis: redis.redis, keyPrefix: redis.keyPrefix, cache }, opsRoutes([]))
  const token = generateToken('7')
  await redis.seed(token, { groups: ['dev'] })
  await warm(guarded, redis.verifications, token)
  let before = redis.verifications.count()
  t.equal(await opsStatus(guarded, token), 403, 'outside ops, answered from the cache')
  t.equal(redis.verifications.count(), before, 'without a read')

  let started = performance.now()
  await redis.regroup(token, ['dev', 'ops'])
  const added = await untilGroups(t, guarded, token, ['dev', 'ops'], started)
  t.equal(await opsStatus(guarded, token), 200, 'added to ops: /ops passes')
  before = redis.verifications.count()
  t.same(await whoami(guarded, token), { status: 200, groups: ['dev', 'ops'] })
  t.equal(redis.verifications.count(), before, 'the new set is cached in its turn')

  started = performance.now()
  await redis.regroup(token, [])
  const removed = await untilGroups(t, guarded, token, [], started)
  t.equal(await opsStatus(guarded, token), 403, 'removed from every group: /ops refuses again')
  t.comment(`direct: a membership change to the cache's new answer: added ${added.toFixed(1)} ms, removed ${removed.toFixed(1)} ms`)
  t.ok(Math.max(added, removed) < FEED_NOT_TTL_MS, 'by the feed, not by the cache\'s expiry (60 s)')
})

/**
 * A token service stand-in for HTTP mode (as test/guard/skewed-clock.test.ts): Authenticate answers
 * every token as ann with `groups()` (no field at all when it returns undefined: a service of
 * before groups), and its revocation stream is live, with `announce` sending a `revoked` event.
 */
async function standIn (t: Test, groups: () => readonly string[] | undefined): Promise<{ authenticateUrl: string, verifications: VerificationCounter, announce (hash: string): void }> {
  let verifications = 0
  const streams = new Set<ServerResponse>()
  const expiresAt = Date.now() + HOUR_MS
  const server = createServer((request, response) => {
    if (request.method === 'GET' && request.url === '/auth/revocations') {
      response.writeHead(200, { 'content-type': 'text/event-stream' })
      response.write('event: ready\ndata: \n\n')
      streams.add(response)
      const beat = setInterval(() => { response.write('event: heartbeat\ndata: 800\n\n') }, 100)
      response.on('close', () => { clearInterval(beat); streams.delete(response) })
      return
    }
    request.resume()
    request.on('end', () => {
      verifications++
      const set = groups()
      response.writeHead(200, { 'content-type': 'application/json', date: new Date().toUTCString() })
      response.end(JSON.stringify({ status: 0, message: 'Success', expiration_date: formatExpirationDate(expiresAt), account_id: '7', username: 'ann', federated: false, ...(set === undefined ? {} : { groups: set }) }))
    })
  })
  await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
  t.teardown(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => { server.close(resolve) })
  })
  return {
    authenticateUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/auth/Authenticate`,
    verifications: { count: () => verifications },
    announce (hash) {
      for (const stream of streams) stream.write(`event: revoked\ndata: ${hash}\n\n`)
    }
  }
}

t.test('HTTP mode: request.auth.groups from Authenticate\'s answer, [] from a service of before groups', async (t) => {
  let groups: readonly string[] | undefined = ['dev', 'ops']
  const service = await standIn(t, () => groups)
  const guarded = await buildGuardedApp(t, { authenticateUrl: service.authenticateUrl }, opsRoutes([]))
  const token = generateToken('7')
  t.same(await whoami(guarded, token), { status: 200, groups: ['dev', 'ops'] })
  t.equal(await opsStatus(guarded, token), 200)
  groups = undefined
  t.same(await whoami(guarded, token), { status: 200, groups: [] }, 'no groups field: none')
  t.equal(await opsStatus(guarded, token), 403, 'and outside every rule')
})

t.test('HTTP mode: a membership change announced on the stream reaches a warm cache', async (t) => {
  let groups: readonly string[] = ['dev']
  const service = await standIn(t, () => groups)
  const guarded = await buildGuardedApp(t, { authenticateUrl: service.authenticateUrl, cache }, opsRoutes([]))
  const token = generateToken('7')
  await warm(guarded, service.verifications, token)
  const before = service.verifications.count()
  t.equal(await opsStatus(guarded, token), 403, 'outside ops, from the cache')
  t.equal(service.verifications.count(), before)

  groups = ['dev', 'ops']
  t.same(await whoami(guarded, token), { status: 200, groups: ['dev'] }, 'unannounced, the cache still holds the old set (the service always announces)')
  const started = performance.now()
  service.announce(hashToken(token))
  const delay = await untilGroups(t, guarded, token, ['dev', 'ops'], started)
  t.equal(await opsStatus(guarded, token), 200, 'added to ops: /ops passes')
  t.comment(`http: a membership change announced on the stream to the cache's new answer: ${delay.toFixed(1)} ms`)
  t.ok(delay < FEED_NOT_TTL_MS, 'by the stream, not by the cache\'s expiry (60 s)')
})

for (const mode of MODES) {
  t.test(`${mode} mode, the real service: a published hash whose record lives on is asked again and passes`, async (t) => {
    const service = await startTokenService(t)
    const { options, verifications } = guardOptions(t, service, mode, { cache })
    const guarded = await buildGuardedApp(t, options)
    const token = await service.login()
    await warm(guarded, verifications, token)
    const before = verifications.count()
    const started = performance.now()
    // What the service does to each token of an account whose groups changed (after rewriting its record).
    await service.admin.publish(`${service.keyPrefix}revoked`, hashToken(token))
    const statuses = new Set<number>()
    for (;;) {
      statuses.add(await guarded.status(token))
      if (verifications.count() > before) break
      if (performance.now() - started > FEED_NOT_TTL_MS) throw new Error('the cached answer was never dropped')
      await sleep(2)
    }
    t.comment(`${mode}: a published hash to the next verification: ${(performance.now() - started).toFixed(1)} ms`)
    t.same([...statuses], [200], 'every answer a pass')
    t.equal(await guarded.status(token), 200, 'asked again and passed')
    await warm(guarded, verifications, token)
    t.pass('and cached again')
  })
}
