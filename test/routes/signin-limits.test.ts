import t from 'tap'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { buildTestApp } from '../support/app.js'
import { freshRedisPrefix } from '../../support/redis.js'

/*
 * The routes anyone may call before signing in (passkey options, a passkey's answer, the code
 * step) are limited per client IP: past the limit a JSON route answers the contract's 429 and the
 * code step the sign-in page's "Too many attempts", both with Retry-After; another client is not
 * affected; the client is the address the service trusts (AUTH_TRUST_PROXY), not a header anyone
 * may send; and the count is shared by every instance on one Redis.
 */

const HOST = 'auth.example.org'
const JSON_HEADERS = { 'content-type': 'application/json', host: HOST, origin: `http://${HOST}`, 'sec-fetch-site': 'same-origin' }
const FORM_HEADERS = { 'content-type': 'application/x-www-form-urlencoded', host: HOST, origin: `http://${HOST}`, 'sec-fetch-site': 'same-origin' }
const TOO_MANY = { status: 429, message: 'Too Many Requests' }

async function options (app: FastifyInstance, remoteAddress: string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return await app.inject({ method: 'POST', url: '/auth/signin/passkey/options', headers: { ...JSON_HEADERS, ...headers }, payload: '{}', remoteAddress })
}

function retryAfter (response: LightMyRequestResponse): number {
  return Number(response.headers['retry-after'])
}

t.test('one client\'s flood of passkey options: 429 with Retry-After past the default limit, another client unaffected', async (t) => {
  const { app, config } = await buildTestApp(t, 'embedded')
  t.equal(config.preSignInRequestsPerIp, 30, 'the default: 30 requests')
  t.equal(config.preSignInWindowSeconds, 60, 'a minute')
  const statuses: number[] = []
  let refused: LightMyRequestResponse | undefined
  for (let i = 0; i < 45; i++) {
    const response = await options(app, '198.51.100.7')
    statuses.push(response.statusCode)
    if (response.statusCode === 429) refused ??= response
  }
  t.same(statuses.slice(0, 30), Array(30).fill(200), 'the first 30 get their options')
  t.same(statuses.slice(30), Array(15).fill(429), 'every one after them: 429')
  t.same(refused?.json(), TOO_MANY, 'the contract\'s body')
  t.ok(retryAfter(refused as LightMyRequestResponse) >= 1 && retryAfter(refused as LightMyRequestResponse) <= 60, `Retry-After ${String(refused?.headers['retry-after'])}: within the window`)
  t.equal((await options(app, '198.51.100.8')).statusCode, 200, 'another client still gets its options')
  t.equal((await options(app, '2001:db8:1:2::7')).statusCode, 200, 'an IPv6 client too')
})

t.test('an IPv6 client is its /64: rotating the interface part gains nothing', async (t) => {
  const { app } = await buildTestApp(t, 'embedded', { preSignInRequestsPerIp: 3 })
  const answers = []
  for (let i = 1; i <= 5; i++) answers.push((await options(app, `2001:db8:1:2::${i.toString(16)}`)).statusCode)
  t.same(answers, [200, 200, 200, 429, 429], 'one /64, one count')
  t.equal((await options(app, '2001:db8:1:3::1')).statusCode, 200, 'the next /64 is another client')
  t.equal((await options(app, '::ffff:198.51.100.9')).statusCode, 200, 'an IPv4-mapped address is its IPv4 address')
})

t.test('the client is the address the service trusts: a forged X-Forwarded-For gains nothing', async (t) => {
  const { app: direct } = await buildTestApp(t, 'embedded', { preSignInRequestsPerIp: 2 })
  const forged = []
  for (let i = 0; i < 3; i++) forged.push((await options(direct, '203.0.113.5', { 'x-forwarded-for': `198.51.100.${i}` })).statusCode)
  t.same(forged, [200, 200, 429], 'no trusted proxy: the header is ignored, the socket\'s address counts')

  const { app: proxied } = await buildTestApp(t, 'embedded', { preSignInRequestsPerIp: 2, trustProxy: ['127.0.0.1'] })
  const behind = []
  for (let i = 0; i < 3; i++) behind.push((await options(proxied, '127.0.0.1', { 'x-forwarded-for': '198.51.100.20' })).statusCode)
  t.same(behind, [200, 200, 429], 'behind a trusted proxy: the forwarded client counts')
  t.equal((await options(proxied, '127.0.0.1', { 'x-forwarded-for': '198.51.100.21' })).statusCode, 200, 'and another client behind the same proxy has a count of its own')
})

t.test('a passkey\'s answer is limited too: the contract\'s 429', async (t) => {
  const { app } = await buildTestApp(t, 'embedded', { preSignInRequestsPerIp: 3 })
  const answer = JSON.stringify({ response: { id: 'x', rawId: 'x', type: 'public-key', response: {} } })
  const statuses = []
  let last: LightMyRequestResponse | undefined
  for (let i = 0; i < 4; i++) {
    last = await app.inject({ method: 'POST', url: '/auth/signin/passkey', headers: JSON_HEADERS, payload: answer, remoteAddress: '198.51.100.30' })
    statuses.push(last.statusCode)
  }
  t.same(statuses, [401, 401, 401, 429], 'answers that prove nothing, then 429')
  t.same(last?.json(), TOO_MANY)
  t.ok(retryAfter(last as LightMyRequestResponse) >= 1, 'with Retry-After')
  t.equal((await options(app, '198.51.100.30')).statusCode, 200, 'the options route counts apart')
})

t.test('the code step: past the limit, the sign-in page\'s "Too many attempts" with 429 and Retry-After', async (t) => {
  const { app } = await buildTestApp(t, 'embedded', { preSignInRequestsPerIp: 3, redirectAllowed: ['app.example.org'] })
  const post = async (): Promise<LightMyRequestResponse> => await app.inject({
    method: 'POST',
    url: '/auth/signin/code',
    headers: { ...FORM_HEADERS, cookie: 'AuthPending1=never-issued' },
    payload: new URLSearchParams({ otp: '123456', rd: 'https://app.example.org/back' }).toString(),
    remoteAddress: '198.51.100.40'
  })
  const statuses = []
  let last: LightMyRequestResponse | undefined
  for (let i = 0; i < 4; i++) {
    last = await post()
    statuses.push(last.statusCode)
  }
  t.same(statuses, [401, 401, 401, 429], 'an unknown pending sign-in three times, then 429')
  const page = last as LightMyRequestResponse
  t.match(page.headers['content-type'], /^text\/html/, 'a page, not the JSON body')
  t.match(page.body, /Too many attempts\. Try again in a minute\./, 'the sign-in page\'s notice')
  t.match(page.body, 'value="https://app.example.org/back"', 'the way back carried on')
  t.ok(retryAfter(page) >= 1 && retryAfter(page) <= 60, `Retry-After ${String(page.headers['retry-after'])}`)
  t.equal(page.headers['x-frame-options'], 'DENY', 'the page\'s own headers')
})

t.test('two instances on one Redis share the count', async (t) => {
  const prefix = await freshRedisPrefix(t)
  const { app: a } = await buildTestApp(t, 'real', { preSignInRequestsPerIp: 4, redisKeyPrefix: prefix })
  const { app: b } = await buildTestApp(t, 'real', { preSignInRequestsPerIp: 4, redisKeyPrefix: prefix })
  const statuses = []
  for (const app of [a, b, a, b, a, b]) statuses.push((await options(app, '198.51.100.50')).statusCode)
  t.same(statuses, [200, 200, 200, 200, 429, 429], 'four in all, whichever instance answered')
  t.equal((await options(b, '198.51.100.51')).statusCode, 200, 'another client is not limited')
})
