import t from 'tap'
import { cookie, getPage, login, postForm, setUp } from './support.js'
import { fixtureAccounts } from '../support/app.js'

/*
 * The console's way in (api-contract.md, "Admin console (for people)"): a browser not signed in
 * goes through the sign-in and back, a signed-in account outside AUTH_ADMIN_GROUP gets a 403
 * page, an admin the page; every page carries the sign-in pages' strict headers.
 */

const PAGES = ['/console', '/console/accounts', '/console/accounts?q=al', '/console/accounts/alice', '/console/events', '/console/webhooks', '/console/clients',
  '/console/accounts/alice/disable', '/console/accounts/alice/revoke-all']

t.test('every page: anonymous → the sign-in and back, outsider → 403, admin → 200 with the strict headers', async (t) => {
  const { app, admin, person } = await setUp(t)
  for (const url of PAGES) {
    const anonymous = await getPage(app, url)
    t.equal(anonymous.statusCode, 303, `${url} anonymous`)
    t.equal(anonymous.headers.location, `/auth/signin?rd=${url}`, `${url} comes back to itself`)

    const outsider = await getPage(app, url, person)
    t.equal(outsider.statusCode, 403, `${url} for alice`)
    t.match(outsider.body, /not in the group allowed to use the admin console/)
    t.notMatch(outsider.body, /Dashboard|Audit events/, 'no console for an outsider')

    const page = await getPage(app, url, admin)
    t.equal(page.statusCode, 200, `${url} for root`)
    t.match(page.headers['content-type'], /^text\/html/)
    t.equal(page.headers['x-frame-options'], 'DENY')
    t.match(page.headers['content-security-policy'], /default-src 'none'/)
    t.match(page.headers['content-security-policy'], /frame-ancestors 'none'/)
    t.match(page.headers['content-security-policy'], /script-src 'self'/)
    t.equal(page.headers['cache-control'], 'no-store')
    t.notMatch(page.body, /<script|style="|onclick=/i, `${url}: no script and no inline style`)
  }
})

t.test('the sign-in sends an admin back to the console', async (t) => {
  const { app } = await setUp(t)
  const signIn = await postForm(app, '/auth/signin', '', { username: 'root', password: 'pw', rd: '/console/accounts?q=al' })
  t.equal(signIn.statusCode, 303)
  t.equal(signIn.headers.location, 'http://localhost/console/accounts?q=al')
})

t.test('a form posted without a sign-in goes to the sign-in, and changes nothing', async (t) => {
  const { app } = await setUp(t)
  const answer = await postForm(app, '/console/accounts/alice/disable', '', { confirm: 'yes' })
  t.equal(answer.statusCode, 303)
  t.equal(answer.headers.location, '/auth/signin?rd=/console')
  t.equal((await app.accounts.show('alice')).disabled, false)
})

t.test('leaving the admin group closes the console at once', async (t) => {
  const { app, admin } = await setUp(t)
  t.equal((await getPage(app, '/console', admin)).statusCode, 200)
  await fixtureAccounts(app).setGroups('root', [])
  t.equal((await getPage(app, '/console', admin)).statusCode, 403)
})

t.test('AUTH_ADMIN_GROUP names the group', async (t) => {
  const { app, admin, person } = await setUp(t, 'real', { adminGroup: 'helpdesk' })
  t.equal((await getPage(app, '/console', admin)).statusCode, 403, 'admins is not the group now')
  await fixtureAccounts(app).setGroups('alice', ['helpdesk'])
  t.equal((await getPage(app, '/console', person)).statusCode, 200)
})

t.test('only a Login token in the cookie opens it: not an API key, not an ended token, not two cookies', async (t) => {
  const { app, admin } = await setUp(t)
  const root = await app.accounts.show('root')
  const { secret } = await app.apiKeys.create(root, 'script', 30, { userAgent: 'test' })
  t.equal((await getPage(app, '/console', cookie(secret))).statusCode, 303, 'an API key is no cookie')
  const other = await login(app, 'root')
  t.equal((await getPage(app, '/console', `${admin}; ${cookie(other)}`)).statusCode, 303, 'two AuthToken1 values: none')
  await app.inject({ method: 'POST', url: '/auth/Logout', headers: { cookie: cookie(other) } })
  t.equal((await getPage(app, '/console', cookie(other))).statusCode, 303, 'a token logged out')
})

t.test('a console path that is no page: the gate first, then the console\'s own 404 page', async (t) => {
  const { app, admin, person } = await setUp(t)
  const url = '/console/no-such-page'
  t.equal((await getPage(app, url)).statusCode, 303, 'anonymous: to the sign-in, as any console page')
  t.equal((await getPage(app, url, person)).statusCode, 403, 'an outsider learns nothing of which pages exist')
  const page = await getPage(app, url, admin)
  t.equal(page.statusCode, 404)
  t.match(page.headers['content-type'], /^text\/html/, 'a page, not the API\'s JSON')
  t.equal(page.headers['x-frame-options'], 'DENY')
  t.match(page.body, /Not found/)
  t.match(page.body, /no such page in the admin console/)
  t.match(page.body, /href="\/console\/accounts"/, 'with the way back')
})

t.test('AUTH_CONSOLE=false: every console path is a 404', async (t) => {
  const { app, admin } = await setUp(t, 'real', { consoleOn: false })
  for (const url of ['/console', '/console/accounts', '/console/assets/console.css']) {
    t.equal((await getPage(app, url, admin)).statusCode, 404, url)
  }
})

t.test('the stylesheet is served to anyone, as the sign-in page\'s', async (t) => {
  const { app } = await setUp(t)
  const css = await getPage(app, '/console/assets/console.css')
  t.equal(css.statusCode, 200)
  t.match(css.headers['content-type'], /^text\/css/)
  t.equal((await app.inject({ method: 'DELETE', url: '/console' })).statusCode, 405)
})
