import t, { type Test } from 'tap'
import fc, { type Arbitrary } from 'fast-check'
import { connect } from 'node:net'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { PARAMETERS, reasons } from '../../src/errors/reasons.js'
import { buildTestApp, fixtureAccounts } from '../support/app.js'
import { freshRedisPrefix } from '../../support/redis.js'

/*
 * The HTTP surface under property-based fuzzing (contract, wire format):
 * arbitrary strings, full-Unicode strings, bytes and parameter combinations at the
 * three routes through inject, and raw request lines and headers through a real
 * socket. Never a 500, never anything but the contract's bodies, never a stack
 * trace, and a normal Login still works afterwards. A 400's detail is one of
 * the service's own reasons and never holds what was sent. Fixed seeds: a failure names
 * its counterexample and reproduces.
 */

const SEED = 20_240_611
const RUNS = { strings: 600, unicode: 400, bytes: 400, combinations: 800, marked: 600, socket: 500 }

const { app } = await buildTestApp(t, 'real', {
  // Fuzzing fails many logins from one address: no limit may turn the final check into a 429.
  maxFailedLogins: 100,
  maxFailedLoginsPerIp: 1_000_000,
  redisKeyPrefix: await freshRedisPrefix(t)
})
const KNOWN = { username: 'fuzzer', password: 'fuzz pass&=%/' }
const CANARY = { username: 'canary', password: `canary-${Math.random().toString(36).slice(2)}` }
await fixtureAccounts(app).add(KNOWN.username, KNOWN.password, false)
await fixtureAccounts(app).add(CANARY.username, CANARY.password, false)
async function issueToken (): Promise<string> {
  return (await app.inject({ method: 'POST', url: '/auth/Login', payload: KNOWN })).json<{ token: string }>().token
}
/**
 * Generated requests name the active token by this placeholder; it is replaced at send
 * time by `activeToken`, which a fuzzed Logout that succeeds ends and a new Login replaces.
 */
const knownToken = 'ACTIVE0TOKEN0PLACEHOLDER'
let activeToken = await issueToken()
const withToken = (text: string): string => text.replaceAll(knownToken, activeToken)

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'TRACE'] as const
const ROUTES = ['/auth/Login', '/auth/Authenticate', '/auth/Logout'] as const
type Route = typeof ROUTES[number]
const CONTENT_TYPES = [
  'application/json', 'application/json; charset=utf-8', 'application/x-www-form-urlencoded',
  'application/x-www-form-urlencoded; charset=iso-8859-1', 'APPLICATION/JSON', 'text/plain', 'text/json', 'application/xml',
  'multipart/form-data; boundary=x', 'application/octet-stream', 'application/json; charset=latin1', 'application/jsonx',
  '*/*', 'application/javascript', ';', ''
]
const PARAM_KEYS = [
  'username', 'password', 'token', 'format', 'callback', 'jsonpFunction', 'jsopFunction', 'jsonpFormat',
  '__proto__', 'constructor', 'prototype', 'AuthToken1', 'AuthToken', 'Username', 'PASSWORD', 'token[]', 'password[0]'
]
const GOOD_VALUES = [KNOWN.username, KNOWN.password, knownToken, 'json', 'cb', 'jsonp', 'callback', 'eval', '', 'a'.repeat(2049)]

/** Percent-encodes the UTF-8 bytes of everything but printable ASCII (lone surrogates become U+FFFD). */
function encodeLoosely (text: string, keep = /[!-~]/): string {
  let out = ''
  for (const char of text) {
    if (keep.test(char)) out += char
    else for (const byte of Buffer.from(char, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return out
}
/** Every byte percent-encoded: arbitrary bytes, valid UTF-8 or not, in a URL. */
function encodeBytes (bytes: Uint8Array): string {
  return [...bytes].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')
}
/** A value safe in a header: printable latin1 only. */
function headerSafe (text: string): string {
  return text.replace(/[^\u0020-\u007e]/g, '')
}

/**
 * Every detail a 400 can carry: each reason builder with every argument it could be given
 * (more than the service ever combines; what matters is that each is made of the service's
 * own words and parameter names only).
 */
const DETAILS: ReadonlySet<string> = (() => {
  const details = new Set<string>()
  const argumentsTried: unknown[] = [...PARAMETERS, 'query string', 'form body', 'path', 'a parameter name in the query string', 'a parameter name in the form body', 2048]
  for (const build of Object.values(reasons) as Array<(argument?: unknown) => string>) {
    if (build.length === 0) {
      details.add(build())
      continue
    }
    for (const argument of argumentsTried) {
      try {
        details.add(build(argument))
      } catch {}
    }
  }
  return details
})()
const detailsSeen = new Map<string, number>()

const JSONP = /^function [A-Za-z_$][A-Za-z0-9_$]{0,63}\(\) \{return \{"status":-?\d+,"message":"[^"]*"\};\}$/
const STACK = /\n\s*at |\bat [^\s]+ \(|Error:|"stack"/
// kind (token or api_key) and an API key's key_id: the Authenticate answer for a key (api-contract, "Machine credentials").
const AUTHENTICATE_EXTRAS = new Set(['account_id', 'username', 'federated', 'kind', 'key_id', 'groups'])

/** The contract's bodies, as the fuzz checks them. Empty when the answer is fine. */
function problems (route: Route | undefined, method: string, statusCode: number, contentType: string | undefined, body: string): string[] {
  const found: string[] = []
  if (statusCode >= 500) found.push(`HTTP ${statusCode}`)
  if (STACK.test(body)) found.push('a stack trace')
  // Over a socket HEAD has no body; inject hands back the one the handler produced, which must be right too.
  if (method === 'HEAD' && body === '') return found
  if (contentType?.startsWith('application/javascript') === true) {
    if (statusCode !== 200) found.push(`padded answer with HTTP ${statusCode}`)
    if (!JSONP.test(body)) found.push(`padded body ${JSON.stringify(body.slice(0, 120))}`)
    return found
  }
  if (contentType !== 'application/json; charset=utf-8') found.push(`content type ${String(contentType)}`)
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    found.push(`not JSON: ${JSON.stringify(body.slice(0, 120))}`)
    return found
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    found.push(`not an object: ${body.slice(0, 120)}`)
    return found
  }
  const record = parsed as Record<string, unknown>
  const keys = Object.keys(record)
  if (statusCode === 400) {
    const detail = record.detail
    if (keys.join() !== 'status,message,detail') found.push(`400 keys ${keys.join()}`)
    if (typeof detail !== 'string' || !DETAILS.has(detail)) found.push(`a detail that is not one of the service's reasons: ${JSON.stringify(detail)}`)
    else detailsSeen.set(detail, (detailsSeen.get(detail) ?? 0) + 1)
  }
  if (!Number.isInteger(record.status)) found.push('status is not an integer')
  if (typeof record.message !== 'string') found.push('message is not a string')
  if (statusCode === 200 && route === '/auth/Login' && 'token' in record) {
    if (keys.join() !== 'status,message,token,AuthToken,expiration_date') found.push(`Login success keys ${keys.join()}`)
  } else if (statusCode === 200 && route === '/auth/Authenticate' && 'expiration_date' in record) {
    if (keys.slice(0, 3).join() !== 'status,message,expiration_date' || !keys.slice(3).every((k) => AUTHENTICATE_EXTRAS.has(k))) {
      found.push(`Authenticate success keys ${keys.join()}`)
    }
  } else if (statusCode === 200 && route === undefined && 'service' in record) {
    // GET / (and `GET *`, which the router takes for it): the pointer to the docs, the sign-in page and the health checks.
    if (keys.join() !== 'status,message,service,version,docs,signin,health') found.push(`pointer keys ${keys.join()}`)
  } else if (statusCode !== 400 && keys.join() !== 'status,message') {
    found.push(`keys ${keys.join()} (HTTP ${statusCode})`)
  }
  const expected = statusCode === 200 ? 0 : statusCode === 401 ? 701 : statusCode
  if (record.status !== expected) found.push(`body status ${String(record.status)} for HTTP ${statusCode}`)
  return found
}

/** An inject request whose method may be any of METHODS (TRACE included, which inject's type leaves out). */
type FuzzRequest = Omit<InjectOptions, 'method' | 'url'> & { method: string, url: string }

const statuses = new Map<number, number>()
let requests = 0

async function check (generated: FuzzRequest, route: Route): Promise<boolean> {
  requests++
  const options: FuzzRequest = {
    ...generated,
    url: withToken(generated.url),
    ...(typeof generated.payload === 'string' ? { payload: withToken(generated.payload) } : {}),
    ...(generated.headers === undefined ? {} : { headers: Object.fromEntries(Object.entries(generated.headers).map(([k, v]) => [k, typeof v === 'string' ? withToken(v) : v])) })
  }
  const res: LightMyRequestResponse = await app.inject({ ...options, method: options.method as InjectOptions['method'] })
  if (route === '/auth/Logout' && res.statusCode === 200) activeToken = await issueToken()
  statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
  const found = problems(route, options.method, res.statusCode, res.headers['content-type'] as string | undefined, res.body)
  if (found.length > 0) throw new Error(`${options.method} ${options.url.slice(0, 200)}: ${found.join('; ')} — body ${JSON.stringify(res.body.slice(0, 200))}`)
  return true
}

async function property<T> (t: Test, name: string, runs: number, arbitrary: Arbitrary<T>, run: (value: T) => Promise<boolean>): Promise<void> {
  const started = Date.now()
  const before = requests
  try {
    await fc.assert(fc.asyncProperty(arbitrary, run), { seed: SEED, numRuns: runs, includeErrorInReport: true })
    t.pass(`${name}: the property holds`)
  } catch (error) {
    t.fail(`${name}: ${error instanceof Error ? error.message : String(error)}`)
  }
  t.comment(`${name}: ${runs} runs (seed ${SEED}), ${requests - before} requests, ${Date.now() - started} ms`)
}

const method = fc.constantFrom(...METHODS)
const route = fc.constantFrom(...ROUTES)
const contentType = fc.oneof(fc.constantFrom(...CONTENT_TYPES), fc.string({ maxLength: 40 }).map(headerSafe))
/** Path suffixes: nothing, a slash, segments, percent-encoding junk, arbitrary text. */
const suffix = fc.oneof(
  fc.constantFrom('', '/', '//', '/%', '/%Z', '/%E0%A4', '/%00', '/%2F', '/%25', '/%C0%AF', '/..', '/./', '/%2e%2e', '/a/b/c/d', '/%ZZ/%ZZ', '?', '?&', '?=', '?==&&'),
  fc.string({ unit: 'binary-ascii', maxLength: 60 }).map((s) => `/${encodeLoosely(s)}`),
  fc.tuple(fc.string({ maxLength: 30 }), fc.string({ maxLength: 30 })).map(([a, b]) => `/${encodeLoosely(a)}/${encodeLoosely(b)}`),
  fc.string({ maxLength: 60 }).map((s) => encodeLoosely(s))
)

t.test('arbitrary strings: methods, paths, queries, bodies and content types', async (t) => {
  await property(t, 'arbitrary strings', RUNS.strings,
    fc.record({ method, route, suffix, query: fc.string({ unit: 'binary-ascii', maxLength: 80 }), body: fc.option(fc.string({ unit: 'binary-ascii', maxLength: 200 })), type: contentType }),
    async ({ method, route, suffix, query, body, type }) => await check({
      method,
      url: `${route}${suffix}${query === '' ? '' : `?${encodeLoosely(query)}`}`,
      headers: type === '' ? {} : { 'content-type': type },
      ...(body === null ? {} : { payload: body })
    }, route))
})

/** Where a parameter can travel. */
type Placement = 'query' | 'form' | 'json' | 'path' | 'cookie'
const placement = fc.constantFrom<Placement>('query', 'form', 'json', 'path', 'cookie')

function requestWith (method: string, route: Route, where: Placement, params: Array<[string, string]>): FuzzRequest {
  const encoded = params.map(([k, v]) => `${encodeLoosely(k, /[A-Za-z0-9_.~-]/)}=${encodeLoosely(v, /[A-Za-z0-9_.~-]/)}`).join('&')
  switch (where) {
    case 'query':
      return { method, url: `${route}?${encoded}` }
    case 'form':
      return { method, url: route, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: encoded }
    case 'json':
      return { method, url: route, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(Object.fromEntries(params)) }
    case 'path':
      return { method, url: `${route}/${params.map(([, v]) => encodeLoosely(v, /[A-Za-z0-9_.~-]/)).join('/')}` }
    case 'cookie':
      return { method, url: route, headers: { cookie: params.map(([k, v]) => `${headerSafe(k)}=${encodeLoosely(v, /[A-Za-z0-9_.~-]/)}`).join('; ') } }
  }
}

t.test('full-Unicode strings as usernames, passwords, tokens and padding names, wherever they travel', async (t) => {
  const unicode = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 60 }),
    fc.string({ unit: 'grapheme', maxLength: 30 }),
    // Lone surrogates and other UTF-16 oddities.
    fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 20 }).map((codes) => String.fromCharCode(...codes))
  )
  await property(t, 'full-Unicode strings', RUNS.unicode,
    fc.record({ method, route, where: placement, params: fc.array(fc.tuple(fc.constantFrom(...PARAM_KEYS), unicode), { minLength: 1, maxLength: 4 }) }),
    async ({ method, route, where, params }) => await check(requestWith(method, route, where, params), route))
})

t.test('byte arrays: bodies, and percent-encoded bytes in paths and queries', async (t) => {
  const bytes = fc.uint8Array({ maxLength: 120 })
  await property(t, 'byte arrays', RUNS.bytes,
    fc.record({ method, route, type: contentType, body: bytes, pathBytes: bytes, key: fc.constantFrom(...PARAM_KEYS), valueBytes: bytes }),
    async ({ method, route, type, body, pathBytes, key, valueBytes }) => {
      const url = `${route}/${encodeBytes(pathBytes.slice(0, 40))}?${key}=${encodeBytes(valueBytes)}`
      await check({ method, url, headers: type === '' ? {} : { 'content-type': type }, payload: Buffer.from(body) }, route)
      return await check({ method, url: `${route}?${key}=${encodeBytes(valueBytes)}&username=${encodeBytes(body.slice(0, 30))}&password=x` }, route)
    })
})

t.test('parameter combinations: known and junk keys, duplicates, JSON values, cookies', async (t) => {
  const value = fc.oneof(fc.constantFrom(...GOOD_VALUES), fc.string({ maxLength: 20 }))
  const key = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...PARAM_KEYS) }, { weight: 1, arbitrary: fc.string({ maxLength: 12 }) })
  const pairs = fc.array(fc.tuple(key, value), { maxLength: 6 })
  const jsonBody = fc.oneof(
    fc.dictionary(key, fc.oneof({ weight: 3, arbitrary: value }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) }), { maxKeys: 5 }),
    fc.jsonValue({ maxDepth: 3 })
  )
  const cookie = fc.option(fc.array(fc.tuple(fc.constantFrom('AuthToken1', 'authtoken1', 'AuthToken', 'x', ''), value), { maxLength: 3 }))
  // A valid request's parameters with junk mixed in, so that successes are fuzzed too.
  const valid: Array<Array<[string, string]>> = [[['username', KNOWN.username], ['password', KNOWN.password]], [['token', knownToken]], [['token', knownToken], ['callback', 'cb']]]
  const pairsWithValid = fc.oneof(
    { weight: 3, arbitrary: pairs },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...valid), pairs).chain(([good, extra]) => fc.shuffledSubarray([...good, ...extra], { minLength: good.length + extra.length })) }
  )
  await property(t, 'parameter combinations', RUNS.combinations,
    fc.record({
      // The routes' own methods more often than the others, so that the combinations reach the handlers.
      method: fc.oneof({ weight: 3, arbitrary: fc.constantFrom('POST', 'POST', 'GET') }, { weight: 2, arbitrary: method }),
      route,
      suffix: fc.oneof({ weight: 3, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom('/', `/${knownToken}`, `/${KNOWN.username}/${encodeURIComponent(KNOWN.password)}`) }, { weight: 1, arbitrary: suffix }),
      query: pairsWithValid,
      body: fc.oneof(fc.constant(null), pairsWithValid.map((p) => ({ form: p })), pairsWithValid.map((p) => ({ json: Object.fromEntries(p) })), jsonBody.map((j) => ({ json: j }))),
      type: fc.option(contentType, { freq: 3 }),
      cookie
    }),
    async ({ method, route, suffix, query, body, type, cookie }) => {
      const encode = (p: Array<[string, string]>): string => p.map(([k, v]) => `${encodeLoosely(k, /[A-Za-z0-9_.~-]/)}=${encodeLoosely(v, /[A-Za-z0-9_.~-]/)}`).join('&')
      const headers: Record<string, string> = {}
      let payload: string | undefined
      if (body !== null) {
        if ('form' in body) {
          headers['content-type'] = 'application/x-www-form-urlencoded'
          payload = encode(body.form)
        } else {
          headers['content-type'] = 'application/json'
          payload = JSON.stringify(body.json)
        }
      }
      if (type !== null) headers['content-type'] = type
      if (headers['content-type'] === '') delete headers['content-type']
      if (cookie !== null) headers.cookie = cookie.map(([k, v]) => `${k}=${encodeLoosely(v, /[A-Za-z0-9_.~-]/)}`).join('; ')
      return await check({ method, url: `${route}${suffix}${query.length > 0 ? `?${encode(query)}` : ''}`, headers, ...(payload === undefined ? {} : { payload }) }, route)
    })
})

async function normalLoginWorks (t: Test, app: FastifyInstance, what: string): Promise<void> {
  const login = await app.inject({ method: 'POST', url: '/auth/Login', payload: CANARY })
  t.equal(login.statusCode, 200, `${what}: a normal Login succeeds`)
  const token = login.json<{ token?: string }>().token ?? ''
  t.equal((await app.inject({ method: 'GET', url: `/auth/Authenticate/${token}` })).statusCode, 200, `${what}: its token authenticates`)
}

t.test('a 400 names the parameter and the problem, never a value sent', async (t) => {
  // Every value and every made-up parameter name sent carries the mark, around what makes a
  // parameter bad (percent-encoding, NUL, length, not an identifier, a reserved word, …).
  const MARK = 'Zq9vMk'
  t.notOk([...DETAILS].some((detail) => detail.includes(MARK)), 'the mark is in none of the service\'s reasons')
  const trouble = fc.constantFrom('', '%ZZ', '%E0%A4%A', '100%', '\u0000', 'x'.repeat(2100), '\u00e9'.repeat(600), '\u0344'.repeat(200), '1', '(1)', 'eval', 'if', ' ', '.', '__proto__', 'json')
  const marked = fc.tuple(fc.string({ maxLength: 8 }), trouble, fc.string({ maxLength: 8 }), fc.boolean())
    .map(([before, bad, after, markFirst]) => markFirst ? `${MARK}${before}${bad}${after}` : `${before}${bad}${MARK}${after}`)
  const key = fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...PARAM_KEYS) }, { weight: 1, arbitrary: marked })
  const jsonValue = fc.oneof({ weight: 4, arbitrary: marked }, marked.map((v) => [v]), marked.map((v) => ({ v })), fc.constantFrom(7, true, null))
  type Where = 'query' | 'raw query' | 'form' | 'raw form' | 'json' | 'path' | 'cookie'
  const where = fc.constantFrom<Where>('query', 'raw query', 'form', 'raw form', 'json', 'path', 'cookie')
  const loose = (text: string): string => encodeLoosely(text, /[A-Za-z0-9_.~-]/)
  let refused = 0
  await property(t, 'marked values', RUNS.marked,
    fc.record({ method: fc.constantFrom('POST', 'POST', 'GET'), route, where, params: fc.array(fc.tuple(key, marked), { minLength: 1, maxLength: 4 }), json: fc.dictionary(key, jsonValue, { maxKeys: 3 }) }),
    async ({ method, route, where, params, json }) => {
      // `raw`: printable ASCII as it is, so that a stray % reaches the parser undecoded.
      const pairs = (encode: (text: string) => string): string => params.map(([k, v]) => `${encode(k)}=${encode(v)}`).join('&')
      const options: FuzzRequest = where === 'query'
        ? { method, url: `${route}?${pairs(loose)}` }
        : where === 'raw query'
          ? { method, url: `${route}?${pairs((text) => encodeLoosely(text))}` }
          : where === 'form'
            ? { method, url: route, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: pairs(loose) }
            : where === 'raw form'
              ? { method, url: route, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: pairs((text) => encodeLoosely(text)) }
              : where === 'json'
                ? { method, url: route, headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ ...Object.fromEntries(params), ...json }) }
                : where === 'path'
                  ? { method, url: `${route}/${params.map(([, v]) => encodeLoosely(v)).join('/')}` }
                  : { method, url: route, headers: { cookie: params.map(([k, v]) => `${headerSafe(k)}=${loose(v)}`).join('; ') } }
      const res = await app.inject({ ...options, method: options.method as InjectOptions['method'] })
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
      const found = problems(route, method, res.statusCode, res.headers['content-type'] as string | undefined, res.body)
      // A padded answer names the function asked for; every other body holds nothing that was sent.
      if (res.headers['content-type'] !== 'application/javascript; charset=utf-8' && res.body.includes(MARK)) found.push('the body holds a value sent')
      if (res.statusCode === 400) refused++
      if (found.length > 0) throw new Error(`${method} ${options.url.slice(0, 200)} ${typeof options.payload === 'string' ? options.payload.slice(0, 200) : ''}: ${found.join('; ')} — body ${JSON.stringify(res.body.slice(0, 300))}`)
      return true
    })
  t.ok(refused > RUNS.marked / 3, `most marked requests were refused as bad (${refused} of ${RUNS.marked})`)
  t.comment(`details seen: ${[...detailsSeen].sort(([, a], [, b]) => b - a).map(([detail, n]) => `${detail} ×${n}`).join('; ')}`)
  t.ok(detailsSeen.size >= 15, `the fuzz met many different reasons (${detailsSeen.size})`)
})

t.test('after the inject fuzzing', async (t) => {
  t.comment(`answers by HTTP status: ${[...statuses].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`).join(', ')}`)
  t.ok(statuses.has(200) && statuses.has(400) && statuses.has(404) && statuses.has(405), 'the fuzz reached successes and each kind of refusal')
  await normalLoginWorks(t, app, 'after inject fuzzing')
})

/* Raw requests through a real socket. */

interface RawResponse { statusLine: string, status: number, headers: Map<string, string>, body: Buffer }

/** Splits what came back into responses; throws on anything that is not an HTTP/1.x response. */
function parseResponses (data: Buffer, headRequest: boolean): RawResponse[] {
  const responses: RawResponse[] = []
  let rest = data
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n')
    if (end < 0) throw new Error(`an incomplete or non-HTTP answer: ${JSON.stringify(rest.toString('latin1').slice(0, 200))}`)
    const [statusLine = '', ...headerLines] = rest.subarray(0, end).toString('latin1').split('\r\n')
    const match = /^HTTP\/1\.[01] (\d{3}) [^\r\n]*$/.exec(statusLine)
    if (match === null) throw new Error(`not a status line: ${JSON.stringify(statusLine.slice(0, 200))}`)
    const headers = new Map(headerLines.map((line) => {
      const colon = line.indexOf(':')
      return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()] as [string, string]
    }))
    const status = Number(match[1])
    rest = rest.subarray(end + 4)
    let body: Buffer
    // An answer to HEAD has no body, except one the server writes straight to the socket for a request it could not read.
    const bodiless = headRequest && responses.length === 0 && (rest.length === 0 || rest.subarray(0, 5).toString('latin1') === 'HTTP/')
    if (status < 200 || status === 204 || status === 304 || bodiless) {
      body = Buffer.alloc(0)
    } else if (headers.has('content-length')) {
      const length = Number(headers.get('content-length'))
      body = rest.subarray(0, length)
      rest = rest.subarray(length)
    } else {
      body = rest
      rest = Buffer.alloc(0)
    }
    responses.push({ statusLine, status, headers, body })
  }
  return responses
}

/** Sends bytes on a fresh connection; ends our side once the server goes quiet; resolves with all it sent. */
async function exchange (port: number, bytes: Buffer, quietMs = 25): Promise<Buffer> {
  return await new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    let quiet: NodeJS.Timeout | undefined
    const hard = setTimeout(() => { socket.destroy() }, 5000)
    const endWhenQuiet = (): void => {
      clearTimeout(quiet)
      quiet = setTimeout(() => { socket.end() }, quietMs)
    }
    socket.on('connect', () => {
      socket.write(bytes, () => {})
      endWhenQuiet()
    })
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk)
      endWhenQuiet()
    })
    // A server that refuses the rest of a request may reset the connection: what came back still counts.
    socket.on('error', () => {})
    socket.on('close', () => {
      clearTimeout(quiet)
      clearTimeout(hard)
      resolve(Buffer.concat(chunks))
    })
  })
}

t.test('raw request lines and headers through a real socket', async (t) => {
  // The same app on a socket (buildTestApp's teardown closes it).
  const server = app
  await server.listen({ host: '127.0.0.1', port: 0 })
  const address = server.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0

  const junk = (max: number): Arbitrary<string> => fc.string({ unit: 'binary-ascii', maxLength: max })
  const rawMethod = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...METHODS) }, fc.constantFrom('CONNECT', 'PRI', 'get', 'G ET', 'POST\u0000', ''), junk(10))
  const target = fc.oneof(
    { weight: 4, arbitrary: fc.tuple(route, suffix).map(([r, s]) => `${r}${s}`) },
    fc.constantFrom('*', '/', 'http://x/auth/Login', '//auth/Login', '/auth/Login?username=fuzzer&password=x', `/auth/Authenticate/${knownToken}`),
    fc.integer({ min: 8_000, max: 20_000 }).map((n) => `/auth/Login/${'a'.repeat(n)}`),
    junk(40)
  )
  // Mostly well-formed, so that the fuzz reaches the routes as well as the parser.
  const version = fc.oneof({ weight: 6, arbitrary: fc.constantFrom('HTTP/1.1', 'HTTP/1.0') },
    fc.constantFrom('HTTP/2.0', 'HTTP/0.9', 'http/1.1', 'HTTP/1.1x', 'HTTP/1.1 extra', ''))
  const eol = fc.oneof({ weight: 6, arbitrary: fc.constant('\r\n') }, fc.constantFrom('\n', '\r', '', '\n\r'))
  const header = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.constantFrom<[string, string]>(
        ['Host', 'x'], ['Connection', 'close'], ['Connection', 'keep-alive'], ['Content-Type', 'application/json'],
        ['Content-Type', 'application/x-www-form-urlencoded'], ['Transfer-Encoding', 'chunked'], ['Transfer-Encoding', 'gzip, chunked'],
        ['Content-Length', '0'], ['Content-Length', '5'], ['Content-Length', '-1'], ['Content-Length', '99999999999999999999'],
        ['Content-Length', '1, 2'], ['Expect', '100-continue'], ['Cookie', `AuthToken1=${knownToken}`], ['Authorization', `Bearer ${knownToken}`]
      )
    },
    fc.tuple(junk(12), junk(30)),
    fc.integer({ min: 16_000, max: 20_000 }).map((n) => ['X-Long', 'v'.repeat(n)] as [string, string])
  )
  const request = fc.record({
    method: rawMethod,
    target,
    version,
    eol,
    headers: fc.array(header, { maxLength: 5 }),
    ending: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, fc.constant(false)),
    // No body, a body its Content-Length announces, or bytes that trail the request unannounced.
    body: fc.oneof({ weight: 3, arbitrary: fc.constant({ bytes: new Uint8Array(), announced: false }) },
      fc.record({ bytes: fc.uint8Array({ maxLength: 100 }), announced: fc.boolean() }))
  })
  let answered = 0
  let silent = 0
  let slowest = 0
  const rawStatuses = new Map<number, number>()
  await property(t, 'raw socket requests', RUNS.socket, request, async ({ method, target, version, eol, headers, ending, body }) => {
    // Always a Host: its absence is checked on its own below, and would otherwise end every run early.
    const announced = body.announced ? [`Content-Length: ${body.bytes.length}`] : []
    const head = [`${method} ${target} ${version}`.trimEnd(), 'Host: fuzz', ...announced, ...headers.map(([name, value]) => `${name}: ${value}`)].join(eol)
    const bytes = Buffer.concat([Buffer.from(withToken(`${head}${eol}${ending ? eol : ''}`), 'latin1'), Buffer.from(body.bytes)])
    requests++
    const sent = Date.now()
    const answer = await exchange(port, bytes)
    slowest = Math.max(slowest, Date.now() - sent)
    if (answer.length === 0) {
      silent++
      return true
    }
    answered++
    const responses = parseResponses(answer, method === 'HEAD')
    for (const [i, response] of responses.entries()) {
      rawStatuses.set(response.status, (rawStatuses.get(response.status) ?? 0) + 1)
      if (response.status === 100) continue
      const text = response.body.toString('utf8')
      const headAnswer = method === 'HEAD' && i === 0
      const found = headAnswer || text !== ''
        ? problems(ROUTES.find((r) => target.startsWith(r)), headAnswer ? 'HEAD' : method, response.status, response.headers.get('content-type'), text)
        : [`HTTP ${response.status} without a body`]
      if (response.status >= 500) found.push(`HTTP ${response.status}`)
      if (found.length > 0) throw new Error(`${JSON.stringify(bytes.toString('latin1').slice(0, 200))} → ${response.statusLine}: ${found.join('; ')}`)
    }
    return true
  })
  t.comment(`raw socket: ${answered} answered, ${silent} closed without an answer; slowest ${slowest} ms; statuses ${[...rawStatuses].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`).join(', ')}`)
  t.ok(answered > RUNS.socket / 2, 'most raw requests were answered')

  // Node itself answers an HTTP/1.1 request without Host (an empty, chunked 400) unless the app takes it over.
  const hostless = parseResponses(await exchange(port, Buffer.from('GET /auth/Authenticate HTTP/1.1\r\n\r\n', 'latin1'), 500), false)
  t.equal(hostless[0]?.status, 400, 'an HTTP/1.1 request without Host: 400')
  t.equal(hostless[0]?.body.toString('utf8'), '{"status":400,"message":"Bad Request","detail":"Host header is required"}', 'an HTTP/1.1 request without Host: the status-message body, saying why')

  t.ok(server.server.listening, 'the server is still listening')
  const normal = parseResponses(await exchange(port, Buffer.from('GET /auth/Authenticate?token=nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 'latin1'), 2000), false)
  t.equal(normal[0]?.status, 403, 'a normal request over a socket is answered')
  t.equal(normal[0]?.body.toString('utf8'), '{"status":403,"message":"Unauthorized"}', 'with its status-message body')
  await normalLoginWorks(t, server, 'after socket fuzzing')
})
