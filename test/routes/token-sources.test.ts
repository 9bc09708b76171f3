import { Writable } from 'node:stream'
import t from 'tap'
import { buildTestApp } from '../support/app.js'
import {
  assertStatus, authenticate, badRequestBody, BODIES, FORM, form, setCookies, tokenFor, unknownToken, type LoginSuccess
} from './support.js'

/**
 * One order of token sources on every route (api-contract, Extensions): path, `token`
 * parameter, `Authorization: Bearer`, the `AuthToken1` cookie. A malformed Authorization
 * header is a 400 with its detail; two different AuthToken1 values are no cookie token at
 * all, and the access log says why.
 */

class Lines extends Writable {
  readonly lines: Array<Record<string, unknown>> = []
  override _write (chunk: Buffer | string, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    for (const line of chunk.toString().split('\n')) if (line !== '') this.lines.push(JSON.parse(line) as Record<string, unknown>)
    done()
  }

  /** The access line of the request answered with this x-request-id. */
  accessLine (reqId: unknown): Record<string, unknown> | undefined {
    return this.lines.find((line) => line.reqId === reqId && line.msg === 'request completed')
  }
}

const log = new Lines()
const testApp = await buildTestApp(t, 'real', { logLevel: 'info' }, { logStream: log })
const { app } = testApp
await testApp.addUser('alice', 'pw')
const fresh = async (): Promise<string> => await tokenFor(t, app, 'alice', 'pw')
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
// The log is written in batches: wait for the line.
const flushed = async (): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, 30)) }

t.test('Authorization: Bearer on Authenticate (GET and POST), Logout and Login\'s refresh', async (t) => {
  const token = await fresh()
  assertStatus(t, await app.inject({ method: 'GET', url: '/auth/Authenticate', headers: bearer(token) }), 200, (await authenticate(app, token)).body, 'Authenticate GET')
  t.equal((await app.inject({ method: 'POST', url: '/auth/Authenticate', headers: bearer(token) })).statusCode, 200, 'Authenticate POST')
  t.equal((await app.inject({ method: 'GET', url: '/auth/Authenticate', headers: { authorization: `bearer  ${token}` } })).statusCode, 200, 'the scheme is case-insensitive')

  const refreshed = await app.inject({ method: 'POST', url: '/auth/Login', headers: { ...FORM, ...bearer(token) }, payload: form({ username: 'alice', password: 'pw' }) })
  t.equal(refreshed.json<LoginSuccess>().token, token, 'Login with a Bearer token of the account refreshes it')

  const ended = await app.inject({ method: 'POST', url: '/auth/Logout', headers: bearer(token) })
  assertStatus(t, ended, 200, BODIES.success, 'Logout by Bearer')
  t.same(setCookies(ended), [], 'no cookie touched')
  t.equal((await authenticate(app, token)).statusCode, 403, 'the token is ended')
  assertStatus(t, await app.inject({ method: 'POST', url: '/auth/Logout', headers: bearer(token) }), 403, BODIES.unauthorized, 'a second Logout by Bearer')
})

t.test('the order: path, parameter, Bearer, cookie (a body value before a query value)', async (t) => {
  const [good, bad] = [await fresh(), unknownToken()]
  const cases = [
    { what: 'path before Bearer', url: `/auth/Authenticate/${good}`, headers: bearer(bad), status: 200 },
    { what: 'path before Bearer (bad path)', url: `/auth/Authenticate/${bad}`, headers: bearer(good), status: 403 },
    { what: 'query before Bearer', url: `/auth/Authenticate?token=${bad}`, headers: bearer(good), status: 403 },
    { what: 'query before Bearer (good query)', url: `/auth/Authenticate?token=${good}`, headers: bearer(bad), status: 200 },
    { what: 'Bearer before cookie', url: '/auth/Authenticate', headers: { ...bearer(bad), cookie: `AuthToken1=${good}` }, status: 403 },
    { what: 'Bearer before cookie (good Bearer)', url: '/auth/Authenticate', headers: { ...bearer(good), cookie: `AuthToken1=${bad}` }, status: 200 },
    { what: 'an empty query value is no token: Bearer counts', url: '/auth/Authenticate?token=', headers: bearer(good), status: 200 },
    { what: 'another scheme is no token: the cookie counts', url: '/auth/Authenticate', headers: { authorization: 'Basic YTpi', cookie: `AuthToken1=${good}` }, status: 200 }
  ]
  for (const { what, url, headers, status } of cases) {
    t.equal((await app.inject({ method: 'GET', url, headers })).statusCode, status, what)
  }
  const bodyWins = await app.inject({ method: 'POST', url: `/auth/Authenticate?token=${bad}`, headers: { ...FORM, ...bearer(bad) }, payload: form({ token: good }) })
  t.equal(bodyWins.statusCode, 200, 'a body token before a query token, both before Bearer')

  // Logout ends the token of the first source only.
  const [inQuery, inBearer, inCookie] = [await fresh(), await fresh(), await fresh()]
  const res = await app.inject({ method: 'POST', url: `/auth/Logout?token=${inQuery}`, headers: { ...bearer(inBearer), cookie: `AuthToken1=${inCookie}` } })
  assertStatus(t, res, 200, BODIES.success, 'Logout with query, Bearer and cookie')
  t.equal((await authenticate(app, inQuery)).statusCode, 403, 'the query token was ended')
  t.equal((await authenticate(app, inBearer)).statusCode, 200, 'the Bearer token was not')
  t.equal((await authenticate(app, inCookie)).statusCode, 200, 'the cookie token was not')
  const second = await app.inject({ method: 'POST', url: '/auth/Logout', headers: { ...bearer(inBearer), cookie: `AuthToken1=${inCookie}` } })
  assertStatus(t, second, 200, BODIES.success, 'Logout with Bearer and cookie')
  t.equal((await authenticate(app, inBearer)).statusCode, 403, 'the Bearer token was ended')
  t.equal((await authenticate(app, inCookie)).statusCode, 200, 'the cookie token was not')
  t.same(setCookies(second), [], 'the cookie, not ended, is not cleared')
})

t.test('a malformed Authorization header is a 400 with detail, whichever source wins', async (t) => {
  const token = await fresh()
  const detail = badRequestBody('Authorization header is not a valid Bearer credential')
  for (const authorization of ['Bearer', 'Bearer ', `Bearer ${token} ${token}`, 'Bearer a,b', 'Bearer "quoted"', `Bearer ${token}, Basic YTpi`]) {
    for (const request of [
      { method: 'GET' as const, url: '/auth/Authenticate' },
      { method: 'GET' as const, url: `/auth/Authenticate/${token}` },
      { method: 'POST' as const, url: '/auth/Logout' },
      { method: 'POST' as const, url: `/auth/Logout/${token}` },
      { method: 'POST' as const, url: '/auth/Login', headers: FORM, payload: form({ username: 'alice', password: 'pw' }) }
    ]) {
      const res = await app.inject({ ...request, headers: { ...request.headers, authorization } })
      assertStatus(t, res, 400, detail, `${request.method} ${request.url.replace(token, '{token}')} with "${authorization.replace(token, '{token}')}"`)
    }
  }
  t.equal((await authenticate(app, token)).statusCode, 200, 'nothing was ended')
  const res = await app.inject({ method: 'GET', url: '/auth/Authenticate', headers: { authorization: 'Bearer' } })
  await flushed()
  t.match(log.accessLine(res.headers['x-request-id']), { statusCode: 400, detail: 'Authorization header is not a valid Bearer credential' }, 'the access log says why')
})

t.test('two different AuthToken1 cookies: never first-wins, no cookie token at all', async (t) => {
  const [mine, tossed] = [await fresh(), await fresh()]
  const both = { cookie: `AuthToken1=${tossed}; theme=dark; AuthToken1=${mine}` }
  const reason = 'AuthToken1 cookie given more than once'

  const authenticated = await app.inject({ method: 'GET', url: '/auth/Authenticate', headers: both })
  assertStatus(t, authenticated, 403, BODIES.unauthorized, 'Authenticate: 403, byte-identical to an unknown token')
  t.equal((await app.inject({ method: 'POST', url: '/auth/Authenticate', headers: { cookie: `AuthToken1=${mine}; AuthToken1=${tossed}` } })).statusCode, 403, 'either order')
  t.equal((await app.inject({ method: 'GET', url: '/auth/Authenticate', headers: { cookie: `AuthToken1=${mine}; AuthToken1="${tossed}"` } })).statusCode, 403, 'a quoted second value')
  t.equal((await app.inject({ method: 'GET', url: '/auth/Authenticate', headers: { cookie: `AuthToken1=${mine}; AuthToken1=${unknownToken()}` } })).statusCode, 403, 'an unknown second value')
  const padded = await app.inject({ method: 'GET', url: '/auth/Authenticate?callback=onAuth', headers: both })
  t.equal(padded.body, 'function onAuth() {return {"status":403,"message":"Unauthorized"};}', 'JSONP: the 403 inside')

  const loggedOut = await app.inject({ method: 'POST', url: '/auth/Logout', headers: both })
  assertStatus(t, loggedOut, 403, BODIES.unauthorized, 'Logout: 403')
  t.same(setCookies(loggedOut), [], 'Logout clears no cookie')
  t.equal((await authenticate(app, mine)).statusCode, 200, 'neither token was ended (mine)')
  t.equal((await authenticate(app, tossed)).statusCode, 200, 'neither token was ended (tossed)')

  const login = await app.inject({ method: 'POST', url: '/auth/Login', headers: { ...FORM, ...both }, payload: form({ username: 'alice', password: 'pw' }) })
  t.equal(login.statusCode, 200, 'Login succeeds')
  const issued = login.json<LoginSuccess>().token
  t.not(issued, mine, 'Login refreshed neither cookie: a new token (not mine)')
  t.not(issued, tossed, 'Login refreshed neither cookie: a new token (not the tossed one)')

  await flushed()
  for (const [what, res] of [['Authenticate', authenticated], ['Logout', loggedOut], ['Login', login]] as const) {
    t.match(log.accessLine(res.headers['x-request-id']), { detail: reason }, `${what}: the access log says why`)
  }
  t.notMatch(JSON.stringify(log.lines), mine, 'no token in the log')

  // Other sources still count; the same value twice is one value; an empty one is none.
  t.equal((await app.inject({ method: 'GET', url: `/auth/Authenticate/${mine}`, headers: both })).statusCode, 200, 'a path token beside them')
  t.equal((await app.inject({ method: 'GET', url: '/auth/Authenticate', headers: { ...both, ...bearer(mine) } })).statusCode, 200, 'a Bearer token beside them')
  t.equal((await app.inject({ method: 'GET', url: '/auth/Authenticate', headers: { cookie: `AuthToken1=${mine}; AuthToken1=${mine}` } })).statusCode, 200, 'the same value twice')
  t.equal((await app.inject({ method: 'GET', url: '/auth/Authenticate', headers: { cookie: `AuthToken1=; AuthToken1=${mine}` } })).statusCode, 200, 'an empty value beside one')
  const clean = await app.inject({ method: 'GET', url: '/auth/Authenticate', headers: { cookie: `AuthToken1=${mine}` } })
  await flushed()
  t.equal(log.accessLine(clean.headers['x-request-id'])?.detail, undefined, 'a single cookie logs no reason')
})

t.test('/auth/verify logs why it refused, and never a token', async (t) => {
  const token = await fresh()
  const passed = await app.inject({ method: 'GET', url: `/auth/verify/orders?token=${token}` })
  t.equal(passed.statusCode, 200, 'a query token passes')
  const ambiguous = await app.inject({ method: 'GET', url: '/auth/verify', headers: { cookie: `AuthToken1=${token}; AuthToken1=${unknownToken()}` } })
  const untrusted = await app.inject({ method: 'GET', url: '/auth/verify', headers: { 'x-original-uri': `/orders?token=${token}` } })
  const malformed = await app.inject({ method: 'GET', url: '/auth/verify', headers: { authorization: 'Bearer a b' } })
  await flushed()
  t.match(log.accessLine(passed.headers['x-request-id']), { statusCode: 200, route: '/auth/verify/*', req: { url: '/auth/verify/*?token=[redacted]' } }, 'the pass: its route, the token redacted')
  t.match(log.accessLine(ambiguous.headers['x-request-id']), { statusCode: 401, detail: 'AuthToken1 cookie given more than once' }, 'two cookies')
  t.match(log.accessLine(untrusted.headers['x-request-id']), { statusCode: 401, detail: 'X-Forwarded-Uri or X-Original-URI sent by an untrusted client, ignored' }, 'an original URI from an untrusted caller')
  t.match(log.accessLine(malformed.headers['x-request-id']), { statusCode: 401, detail: 'Authorization header is not a valid Bearer credential' }, 'a malformed Bearer header')
  t.notMatch(JSON.stringify(log.lines), token, 'no token in any line')
})
