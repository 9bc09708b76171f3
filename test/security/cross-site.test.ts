import t from 'tap'
import { buildTestApp } from '../support/app.js'

/*
 * Login CSRF, with the headers a browser sends (Chromium 13x): a cross-site form
 * POST to Login got 200 and a Set-Cookie, signing the victim's browser in as the attacker.
 * The same in a real headless Chromium: test/integration/browser/cross-site-browser.test.ts.
 */

const PASSWORD = 'correct horse battery staple'
const HOST = 'auth.example.org'
const FORM = { 'content-type': 'application/x-www-form-urlencoded', host: HOST }
const CROSS_SITE_FORM = { ...FORM, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document', 'sec-fetch-user': '?1' }
const REFUSED = { status: 403, message: 'Forbidden', detail: 'cross-site request' }
const body = `username=alice&password=${encodeURIComponent(PASSWORD)}`

t.test('Login: cross-site browser requests are refused, the rest pass', async (t) => {
  const { app } = await buildTestApp(t, 'embedded', { allowedOrigins: ['https://app.example.org'] })
  await app.accounts.add('alice', PASSWORD, false)
  const login = async (headers: Record<string, string>, url = '/auth/Login', payload: string | undefined = body) =>
    await app.inject({ method: 'POST', url, headers, payload })

  const refused: Array<[string, Record<string, string>]> = [
    ['a cross-site form POST', CROSS_SITE_FORM],
    ['Sec-Fetch-Site: cross-site without Origin', { ...FORM, 'sec-fetch-site': 'cross-site' }],
    ['an Origin not allowed (an older browser: no Sec-Fetch-*)', { ...FORM, origin: 'https://evil.example' }],
    ['a sibling subdomain (same-site, another origin)', { ...FORM, origin: 'https://evil.example.org', 'sec-fetch-site': 'same-site' }],
    ['Origin: null (a sandboxed frame)', { ...FORM, origin: 'null' }],
    ['the own host on another scheme', { ...FORM, origin: `https://${HOST}` }],
    ['an allowed origin the browser calls cross-site', { ...FORM, origin: 'https://app.example.org', 'sec-fetch-site': 'cross-site' }]
  ]
  for (const [what, headers] of refused) {
    const answer = await login(headers)
    t.equal(answer.statusCode, 403, what)
    t.same(answer.json(), REFUSED, `${what}: the body says why`)
    t.equal(answer.headers['set-cookie'], undefined, `${what}: no cookie`)
  }
  t.equal((await login(CROSS_SITE_FORM, `/auth/Login/alice/${encodeURIComponent(PASSWORD)}`, undefined)).statusCode, 403, 'the legacy path too')
  t.equal((await login({ ...CROSS_SITE_FORM, 'content-type': 'application/json' }, '/auth/Login', JSON.stringify({ username: 'alice', password: PASSWORD }))).statusCode, 403, 'a JSON body too')

  const allowed: Array<[string, Record<string, string>]> = [
    ['a client that is not a browser (no Origin, no Sec-Fetch-*)', FORM],
    ['the service\'s own page', { ...FORM, origin: `http://${HOST}`, 'sec-fetch-site': 'same-origin' }],
    ['an address typed in the browser', { ...FORM, 'sec-fetch-site': 'none' }],
    ['an origin of AUTH_ALLOWED_ORIGINS', { ...FORM, origin: 'https://app.example.org', 'sec-fetch-site': 'same-site' }]
  ]
  for (const [what, headers] of allowed) {
    const answer = await login(headers)
    t.equal(answer.statusCode, 200, what)
    t.match(answer.headers['set-cookie'], /^AuthToken1=/, `${what}: the cookie is set`)
  }
})

t.test('Logout: a cross-site request ends nothing; Authenticate and its padding function keep working', async (t) => {
  const { app } = await buildTestApp(t, 'embedded')
  await app.accounts.add('alice', PASSWORD, false)
  const token = (await app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: body })).json<{ token: string }>().token
  const cookie = { cookie: `AuthToken1=${token}` }
  const ended = await app.inject({ method: 'POST', url: '/auth/Logout', headers: { ...CROSS_SITE_FORM, ...cookie } })
  t.equal(ended.statusCode, 403)
  t.same(ended.json(), REFUSED)
  t.equal((await app.inject({ method: 'POST', url: `/auth/Logout/${token}`, headers: { ...CROSS_SITE_FORM } })).statusCode, 403, 'by path too')
  const script = await app.inject({
    method: 'GET',
    url: `/auth/Authenticate/${token}?jsonpFunction=onAuth`,
    headers: { host: HOST, 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'script', referer: 'https://evil.example/' }
  })
  t.equal(script.statusCode, 200, 'JSONP is a cross-site script GET by design')
  t.equal(script.body, 'function onAuth() {return {"status":0,"message":"Success"};}', 'and the token is still active')
  t.equal((await app.inject({ method: 'POST', url: '/auth/Logout', headers: { host: HOST, ...cookie } })).statusCode, 200, 'a non-browser Logout still works')
})
