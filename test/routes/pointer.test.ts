import t from 'tap'
import { buildTestApp } from '../support/app.js'
import { docsLocation } from '../../src/app/pointer.js'
import { PACKAGE_VERSION } from '../../src/config/version.js'

/** GET / on the public port: a pointer to the docs, the sign-in page and the health checks, not a bare 404. */

const { app } = await buildTestApp(t, 'embedded')

t.test('GET / names the service, its version, the docs page and the health checks', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/' })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  const body = res.json()
  t.match(body, { status: 0, message: 'Success' }, 'the status-message shape every answer has')
  t.equal(body.service, 'auth-token-service')
  t.equal(body.version, PACKAGE_VERSION)
  t.match(body.docs, /^http:\/\/127\.0\.0\.1:\d+\/docs /, 'a URL a person on this host can open')
  t.same(body.health, { live: '/health/live', ready: '/health/ready' })
})

t.test('GET / names the sign-in page, and the page is there', async (t) => {
  const body = (await app.inject({ method: 'GET', url: '/' })).json<{ signin?: unknown }>()
  t.equal(body.signin, '/auth/signin', 'where a person signs in')
  const page = await app.inject({ method: 'GET', url: String(body.signin) })
  t.equal(page.statusCode, 200, 'it answers')
  t.match(page.headers['content-type'], /^text\/html/, 'with a page')
})

t.test('other methods on / are told what works', async (t) => {
  const res = await app.inject({ method: 'POST', url: '/' })
  t.equal(res.statusCode, 405)
  t.equal(res.headers.allow, 'GET')
})

t.test('the docs location: a URL on loopback, a hint elsewhere (the address is not told to the public port)', async (t) => {
  t.equal(docsLocation('127.0.0.1', 3001), 'http://127.0.0.1:3001/docs (the internal listener, from this host)')
  t.equal(docsLocation('::1', 3001), 'http://[::1]:3001/docs (the internal listener, from this host)')
  t.equal(docsLocation('10.1.2.3', 3001), '/docs on the internal listener (INTERNAL_HOST, port 3001)')
  t.notMatch(docsLocation('10.1.2.3', 3001), /10\.1\.2\.3/)
})
