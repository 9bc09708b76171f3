import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import type { Test } from 'tap'
import { generateToken, hashToken } from '@auth-token-service/protocol/token'
import type { TestApp } from '../support/app.js'

/**
 * Shared assertions for the route tests: the contract's status-message bodies,
 * the headers every /auth answer carries, cookies and expiration dates.
 */

export type { InjectOptions }
export type Reply = LightMyRequestResponse

export const JSON_TYPE = 'application/json; charset=utf-8'
export const FORM = { 'content-type': 'application/x-www-form-urlencoded' } as const
export const JSON_HEADERS = { 'content-type': 'application/json' } as const

/** A v2 token: the version, the account's bucket, 43 characters (256 bits). */
export const TOKEN_SHAPE = /^2[A-Za-z0-9_-]{45}$/
export const EXPIRATION_SHAPE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/

/** The exact bytes of a status-message body, key order as the contract writes it (a 400 adds its detail). */
export function statusBody (status: number, message: string, detail?: string): string {
  return JSON.stringify(detail === undefined ? { status, message } : { status, message, detail })
}

/** The exact bytes of a 400 saying `detail`. */
export function badRequestBody (detail: string): string {
  return statusBody(400, 'Bad Request', detail)
}

export const BODIES = {
  success: statusBody(0, 'Success'),
  unauthorized: statusBody(403, 'Unauthorized'),
  notFound: statusBody(404, 'Not Found'),
  methodNotAllowed: statusBody(405, 'Method Not Allowed'),
  payloadTooLarge: statusBody(413, 'Payload Too Large'),
  unsupportedMediaType: statusBody(415, 'Unsupported Media Type'),
  tooManyRequests: statusBody(429, 'Too Many Requests'),
  serviceUnavailable: statusBody(503, 'Service Unavailable'),
  loginFailed: statusBody(701, 'Login Failed')
} as const

/** A token of the right shape that was never issued (of a random account: any bucket). */
export function unknownToken (): string {
  return generateToken(String(Math.random()))
}

/** `application/x-www-form-urlencoded` text, percent-encoding everything that needs it. */
export function form (params: Record<string, string>): string {
  return new URLSearchParams(params).toString()
}

/** Cache-Control and Referrer-Policy on every /auth answer, errors included (contract, wire format). */
export function assertPrivacyHeaders (t: Test, res: Reply, what: string): void {
  t.equal(res.headers['cache-control'], 'no-store', `${what}: Cache-Control: no-store`)
  t.equal(res.headers['referrer-policy'], 'no-referrer', `${what}: Referrer-Policy: no-referrer`)
}

/** Nothing of a stack trace, a Fastify default error or an HTML page. */
export function assertNoLeak (t: Test, res: Reply, what: string): void {
  const body = res.body
  t.notMatch(body, /<html|<!doctype|<body/i, `${what}: no HTML`)
  t.notMatch(body, /"(stack|statusCode|error|code)"\s*:/, `${what}: no stack, statusCode, error or code keys`)
  t.notMatch(body, /\bat .+\(.+:\d+:\d+\)/, `${what}: no stack frames`)
}

/**
 * The answer is exactly the status-message object `{status, message}` with the given
 * HTTP status: the exact bytes, JSON content type, the privacy headers, no leaks.
 */
export function assertStatus (t: Test, res: Reply, httpStatus: number, body: string, what: string): void {
  t.equal(res.statusCode, httpStatus, `${what}: HTTP ${httpStatus}`)
  t.equal(res.body, body, `${what}: body is exactly ${body}`)
  t.equal(res.headers['content-type'], JSON_TYPE, `${what}: JSON content type`)
  assertPrivacyHeaders(t, res, what)
  assertNoLeak(t, res, what)
}

export interface LoginSuccess {
  status: 0
  message: 'Success'
  token: string
  AuthToken: string
  expiration_date: string
}

/** Epoch ms of an `expiration_date` (UTC without a zone designator). */
export function parseExpiration (date: string): number {
  return Date.parse(`${date}Z`)
}

/**
 * Asserts a Login success: HTTP 200, exactly the five contract fields, token and
 * AuthToken the same base64url value, and `expiration_date` the issue instant plus
 * `ttlSeconds`, truncated to the second (issued between `before` and `after`).
 */
export function assertLoginSuccess (t: Test, res: Reply, ttlSeconds: number, before: number, after: number, what: string): LoginSuccess {
  t.equal(res.statusCode, 200, `${what}: HTTP 200`)
  t.equal(res.headers['content-type'], JSON_TYPE, `${what}: JSON content type`)
  assertPrivacyHeaders(t, res, what)
  const body = res.json<LoginSuccess>()
  t.same(Object.keys(body), ['status', 'message', 'token', 'AuthToken', 'expiration_date'], `${what}: exactly the contract's fields, in order`)
  t.equal(body.status, 0, `${what}: status 0`)
  t.equal(body.message, 'Success', `${what}: message Success`)
  t.match(body.token, TOKEN_SHAPE, `${what}: token is a v2 token: 2, a bucket, 43 base64url characters (256 bits)`)
  t.equal(body.AuthToken, body.token, `${what}: AuthToken is the token`)
  t.match(body.expiration_date, EXPIRATION_SHAPE, `${what}: expiration_date is YYYY-MM-DDTHH:MM:SS`)
  const expires = parseExpiration(body.expiration_date)
  const earliest = Math.floor((before + ttlSeconds * 1000) / 1000) * 1000
  const latest = Math.floor((after + ttlSeconds * 1000) / 1000) * 1000
  t.ok(expires >= earliest && expires <= latest,
    `${what}: expiration_date ${body.expiration_date} is now + ${ttlSeconds} s truncated to the second (${new Date(earliest).toISOString()}..${new Date(latest).toISOString()})`)
  return body
}

export interface Cookie {
  name: string
  value: string
  /** Attribute names lower-cased; flags map to ''. */
  attributes: Map<string, string>
}

export function parseSetCookie (header: string): Cookie {
  const [pair = '', ...rest] = header.split(';').map((part) => part.trim())
  const eq = pair.indexOf('=')
  const attributes = new Map<string, string>()
  for (const part of rest) {
    const i = part.indexOf('=')
    if (i < 0) attributes.set(part.toLowerCase(), '')
    else attributes.set(part.slice(0, i).toLowerCase(), part.slice(i + 1))
  }
  return { name: pair.slice(0, eq), value: pair.slice(eq + 1), attributes }
}

/** Every Set-Cookie header of an answer, parsed. */
export function setCookies (res: Reply): Cookie[] {
  const raw = res.headers['set-cookie']
  const list = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw]
  return list.map(parseSetCookie)
}

/** The one AuthToken1 cookie an answer sets (fails the test when there is not exactly one). */
export function tokenCookie (t: Test, res: Reply, what: string): Cookie | undefined {
  const cookies = setCookies(res).filter((c) => c.name === 'AuthToken1')
  t.equal(cookies.length, 1, `${what}: exactly one AuthToken1 cookie`)
  return cookies[0]
}

export interface CookieExpectations {
  secure?: boolean
  domain?: string
}

/** Set-Cookie for a freshly issued or refreshed token: the contract's attributes. */
export function assertTokenCookie (t: Test, res: Reply, token: string, expirationDate: string, ttlSeconds: number, what: string,
  expect: CookieExpectations = {}): void {
  const cookie = tokenCookie(t, res, what)
  if (cookie === undefined) return
  const a = cookie.attributes
  t.equal(cookie.value, token, `${what}: the cookie carries the token`)
  t.equal(a.get('path'), '/', `${what}: Path=/`)
  t.ok(a.has('httponly'), `${what}: HttpOnly`)
  t.equal(a.get('samesite')?.toLowerCase(), 'lax', `${what}: SameSite=Lax`)
  const expires = a.get('expires')
  t.equal(expires === undefined ? NaN : Date.parse(expires), parseExpiration(expirationDate), `${what}: Expires is the expiration_date`)
  const maxAge = Number(a.get('max-age'))
  t.ok(Number.isInteger(maxAge) && maxAge <= ttlSeconds && maxAge >= ttlSeconds - 5, `${what}: Max-Age ${String(a.get('max-age'))} is the lifetime`)
  // Secure by default; AUTH_COOKIE_SECURE=false turns it off.
  t.equal(a.has('secure'), expect.secure ?? true, `${what}: Secure ${expect.secure === false ? 'not set' : 'set'}`)
  t.equal(a.get('domain'), expect.domain, `${what}: Domain ${expect.domain ?? 'not set'}`)
}

/** Set-Cookie that clears AuthToken1 with the attributes it was set with. */
export function assertClearedCookie (t: Test, res: Reply, what: string, expect: CookieExpectations = {}): void {
  const cookie = tokenCookie(t, res, what)
  if (cookie === undefined) return
  const a = cookie.attributes
  t.equal(cookie.value, '', `${what}: the cookie is emptied`)
  const expires = a.get('expires')
  const cleared = a.get('max-age') === '0' || (expires !== undefined && Date.parse(expires) <= Date.now())
  t.ok(cleared, `${what}: Max-Age=0 or an Expires in the past`)
  t.equal(a.get('path'), '/', `${what}: same Path=/`)
  t.ok(a.has('httponly'), `${what}: same HttpOnly`)
  t.equal(a.get('samesite')?.toLowerCase(), 'lax', `${what}: same SameSite=Lax`)
  t.equal(a.has('secure'), expect.secure ?? true, `${what}: same Secure`)
  t.equal(a.get('domain'), expect.domain, `${what}: same Domain`)
}

/** Sorted header names, for comparing that two answers look alike. */
export function headerNames (res: Reply): string[] {
  return Object.keys(res.headers).map((h) => h.toLowerCase()).sort()
}

/** The Allow header as a sorted list of methods. */
export function allowed (res: Reply): string[] {
  const raw = res.headers.allow
  return typeof raw === 'string' ? raw.split(',').map((m) => m.trim()).sort() : []
}

export async function sleep (ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)))
}

/** POST /auth/Login with a form body; returns the answer and the instants around it. */
export async function loginForm (app: FastifyInstance, username: string, password: string, extra: Partial<InjectOptions> = {}) {
  const before = Date.now()
  const res = await app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username, password }), ...extra })
  return { res, before, after: Date.now() }
}

/** A successful form login's token (fails the test otherwise). */
export async function tokenFor (t: Test, app: FastifyInstance, username: string, password: string): Promise<string> {
  const { res } = await loginForm(app, username, password)
  t.equal(res.statusCode, 200, `login of ${username} succeeds`)
  return res.json<LoginSuccess>().token
}

/** GET /auth/Authenticate/{token}. */
export async function authenticate (app: FastifyInstance, token: string): Promise<Reply> {
  return await app.inject({ method: 'GET', url: `/auth/Authenticate/${encodeURIComponent(token)}` })
}

/**
 * Shortens an active token's remaining life to `ms` through the store itself
 * (the way time passing would), without changing whose token it is.
 */
export async function shortenLife (testApp: TestApp, token: string, ms: number): Promise<void> {
  const hash = hashToken(token)
  const record = await testApp.tokens.find(hash)
  if (record === null) throw new Error('shortenLife: the token is not active')
  if (!await testApp.tokens.refresh(hash, { ...record, expiresAt: Date.now() + ms }, ms)) throw new Error('shortenLife: refresh failed')
}

/** A token that was issued and then expired. */
export async function expiredToken (t: Test, testApp: TestApp, username: string, password: string): Promise<string> {
  const token = await tokenFor(t, testApp.app, username, password)
  await shortenLife(testApp, token, 1)
  await sleep(20)
  return token
}

/**
 * Sends each case and asserts it got the 403 Unauthorized answer; returns the answers, the
 * first of them apart, for the check that they are alike byte for byte.
 */
export async function unauthorizedAnswers (t: Test, app: FastifyInstance, cases: Array<[string, InjectOptions]>): Promise<{ first: Reply, answers: Reply[] }> {
  const answers: Reply[] = []
  for (const [what, options] of cases) {
    const res = await app.inject(options)
    assertStatus(t, res, 403, BODIES.unauthorized, what)
    answers.push(res)
  }
  const first = answers[0]
  if (first === undefined) throw new Error('no answers')
  return { first, answers }
}
