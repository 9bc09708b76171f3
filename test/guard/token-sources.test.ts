import t from 'tap'
import { generateToken } from '@auth-token-service/protocol/token'
import { buildGuardedApp, guardOptions, MODES, startTokenService } from './support.js'

const TOKEN_REQUIRED = JSON.stringify({ status: 401, message: 'Token Required' })
const UNAUTHORIZED = JSON.stringify({ status: 403, message: 'Unauthorized' })
const unknownToken = (): string => generateToken(String(Math.random()))

for (const mode of MODES) {
  t.test(`${mode} mode`, async (t) => {
    const service = await startTokenService(t)
    const { options } = guardOptions(t, service, mode)
    const { app } = await buildGuardedApp(t, options)
    const token = await service.login()

    t.test('each token source passes, and request.auth names the account', async (t) => {
      const sources = {
        'path parameter': { method: 'GET' as const, url: `/things/${token}` },
        'query parameter': { method: 'GET' as const, url: '/whoami', query: { token } },
        'form body': {
          method: 'POST' as const,
          url: '/things',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: new URLSearchParams({ name: 'x', token }).toString()
        },
        'JSON body': { method: 'POST' as const, url: '/things', payload: { name: 'x', token } },
        'Authorization: Bearer': { method: 'GET' as const, url: '/whoami', headers: { authorization: `Bearer ${token}` } },
        'AuthToken1 cookie': { method: 'GET' as const, url: '/whoami', headers: { cookie: `theme=dark; AuthToken1=${token}; other=1` } }
      }
      const account = (await service.app.accounts.list())[0]
      for (const [source, request] of Object.entries(sources)) {
        const res = await app.inject(request)
        t.equal(res.statusCode, 200, `${source}: passes`)
        const auth = res.json().auth
        t.match(auth, { accountId: account?.id, username: 'ann', federated: false }, `${source}: request.auth`)
        t.match(auth.expiresAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/, `${source}: expiresAt is the token's whole-second expiry`)
      }
    })

    t.test('sources are taken in order: path, parameter (body before query), bearer, cookie', async (t) => {
      const bad = unknownToken()
      const cases = [
        { what: 'path before query', request: { method: 'GET' as const, url: `/things/${token}`, query: { token: bad } }, status: 200 },
        { what: 'path before query (bad path)', request: { method: 'GET' as const, url: `/things/${bad}`, query: { token } }, status: 403 },
        { what: 'query before bearer', request: { method: 'GET' as const, url: '/whoami', query: { token: bad }, headers: { authorization: `Bearer ${token}` } }, status: 403 },
        { what: 'body before query', request: { method: 'POST' as const, url: `/things?token=${bad}`, payload: { name: 'x', token } }, status: 200 },
        { what: 'body before bearer', request: { method: 'POST' as const, url: '/things', payload: { name: 'x', token: bad }, headers: { authorization: `Bearer ${token}` } }, status: 403 },
        { what: 'bearer before cookie', request: { method: 'GET' as const, url: '/whoami', headers: { authorization: `Bearer ${bad}`, cookie: `AuthToken1=${token}` } }, status: 403 },
        { what: 'bearer before cookie (good bearer)', request: { method: 'GET' as const, url: '/whoami', headers: { authorization: `Bearer ${token}`, cookie: `AuthToken1=${bad}` } }, status: 200 },
        { what: 'an empty query parameter is no token: the cookie counts', request: { method: 'GET' as const, url: '/whoami?token=', headers: { cookie: `AuthToken1=${token}` } }, status: 200 },
        { what: 'another Authorization scheme is no token: the cookie counts', request: { method: 'GET' as const, url: '/whoami', headers: { authorization: 'Basic YTpi', cookie: `AuthToken1=${token}` } }, status: 200 }
      ]
      for (const { what, request, status } of cases) {
        t.equal((await app.inject(request)).statusCode, status, what)
      }
    })

    t.test('no token at all: 401 Token Required with WWW-Authenticate: Bearer', async (t) => {
      for (const request of [
        { method: 'GET' as const, url: '/whoami' },
        { method: 'GET' as const, url: '/whoami', headers: { authorization: 'Basic YTpi', cookie: 'theme=dark' } },
        // Before the route's validation: no token and an invalid body still says 401, not 400.
        { method: 'POST' as const, url: '/things', payload: { nothing: true } }
      ]) {
        const res = await app.inject(request)
        t.equal(res.statusCode, 401)
        t.equal(res.body, TOKEN_REQUIRED)
        t.equal(res.headers['www-authenticate'], 'Bearer')
        t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
        t.equal(res.headers['cache-control'], 'no-store')
      }
    })

    t.test('unknown, malformed, terminated: 403 Unauthorized', async (t) => {
      const ended = await service.login()
      await service.logout(ended)
      const cases = {
        unknown: { method: 'GET' as const, url: '/whoami', query: { token: unknownToken() } },
        terminated: { method: 'GET' as const, url: '/whoami', headers: { authorization: `Bearer ${ended}` } },
        'not token-shaped': { method: 'GET' as const, url: '/whoami', query: { token: 'ats:t:*' } },
        'given twice': { method: 'GET' as const, url: `/whoami?token=${token}&token=${token}` },
        'a number in a JSON body': { method: 'POST' as const, url: '/things', payload: { name: 'x', token: 12 } },
        'a broken Bearer header': { method: 'GET' as const, url: '/whoami', headers: { authorization: 'Bearer' } },
        'a cookie that does not decode': { method: 'GET' as const, url: '/whoami', headers: { cookie: 'AuthToken1=%E0%A4%A' } },
        // Never first-wins: a tossed cookie beside the real one makes neither count.
        'two different AuthToken1 cookies': { method: 'GET' as const, url: '/whoami', headers: { cookie: `AuthToken1=${token}; AuthToken1=${unknownToken()}` } }
      }
      for (const [what, request] of Object.entries(cases)) {
        const res = await app.inject(request)
        t.equal(res.statusCode, 403, `${what}: 403`)
        t.equal(res.body, UNAUTHORIZED, `${what}: the status-message body`)
        t.equal(res.headers['cache-control'], 'no-store', `${what}: no-store`)
        t.notOk(res.headers['www-authenticate'], `${what}: no challenge`)
      }
      // An invalid body with an invalid token: still the guard's 403, not the route's 400.
      const res = await app.inject({ method: 'POST', url: '/things', payload: { token: unknownToken() } })
      t.equal(res.statusCode, 403)
    })

    t.test('a valid token with an invalid body reaches the route\'s own validation', async (t) => {
      const res = await app.inject({ method: 'POST', url: '/things', payload: { token } })
      t.equal(res.statusCode, 400)
    })

    t.test('routes outside the registering scope are not guarded', async (t) => {
      const res = await app.inject({ method: 'GET', url: '/open' })
      t.equal(res.statusCode, 200)
      t.same(res.json(), { open: true, auth: null })
    })
  })
}
