import t from 'tap'
import { readOidc } from '../../src/config/parts/oidc.js'
import { freePort, waitFor } from '../../support/processes.js'
import { fastWebhooks, newWebhookSecret } from '../webhooks/support.js'
import { setUp as setUpProvider, signedInTokens } from '../oidc/support.js'
import { cookie, getPage, postForm, setUp } from './support.js'

/*
 * The console's OpenID clients (while the provider is on) and failed webhook deliveries: each
 * change through the operation the admin API uses, audited with the acting admin; and the gate
 * refuses the provider's access tokens (an application's, not a person's sign-in).
 */

const ACTED = { actor: 'root', credential: 'console' }

t.test('OpenID clients: add (the secret shown once), list, remove after the confirm step', async (t) => {
  const { app, admin } = await setUp(t, 'real', { oidc: readOidc({ AUTH_OIDC_ISSUER: 'http://localhost/oidc' }).oidc })
  t.match((await getPage(app, '/console', admin)).body, /href="\/console\/clients"/, 'the section shows while the provider is on')
  const added = await postForm(app, '/console/clients', admin, { name: 'Grafana', redirect_uris: 'https://grafana.example.org/login/generic_oauth' })
  t.equal(added.statusCode, 200)
  const secret = /<textarea id="client-secret"[^>]*>([^<]+)<\/textarea>/.exec(added.body)?.[1]
  const clientId = /<code id="client-id">([^<]+)<\/code>/.exec(added.body)?.[1] ?? ''
  t.ok(secret !== undefined && secret.length > 20, 'the secret is on the page')
  const [client] = await app.oidcClients.list()
  t.equal(client?.clientId, clientId)
  const list = await getPage(app, '/console/clients', admin)
  t.match(list.body, /Grafana/)
  t.notMatch(list.body, secret ?? 'no secret', 'the list never shows the secret')
  await app.backends.audit.flush()
  t.match(await app.backends.audit.list({ event: 'oidc.client_created' }), [{ outcome: `created:${clientId}`, ...ACTED }])

  const bad = await postForm(app, '/console/clients', admin, { name: 'Bad', redirect_uris: 'not a url' })
  t.equal(bad.statusCode, 400)
  t.match(bad.body, /class="notice error"/)

  t.match((await getPage(app, `/console/clients/${clientId}/remove`, admin)).body, /Remove the client Grafana\?/)
  t.equal((await postForm(app, `/console/clients/${clientId}/remove`, admin)).statusCode, 200, 'unconfirmed: the confirm page')
  t.equal((await app.oidcClients.list()).length, 1)
  const removed = await postForm(app, `/console/clients/${clientId}/remove`, admin, { confirm: 'yes' })
  t.equal(removed.statusCode, 303)
  t.equal((await app.oidcClients.list()).length, 0)
  await app.backends.audit.flush()
  t.match(await app.backends.audit.list({ event: 'oidc.client_removed' }), [{ outcome: `removed:${clientId}`, ...ACTED }])
})

t.test('the provider off: no clients section, and adding one is a 404 page', async (t) => {
  const { app, admin } = await setUp(t)
  t.notMatch((await getPage(app, '/console', admin)).body, /href="\/console\/clients"/)
  t.match((await getPage(app, '/console/clients', admin)).body, /id="oidc-off"/)
  t.equal((await postForm(app, '/console/clients', admin, { name: 'x', redirect_uris: 'https://x.example' })).statusCode, 404)
})

t.test('an OpenID Connect access token in the cookie does not open the console; the browser\'s sign-in does', async (t) => {
  const flow = await setUpProvider(t, 'real')
  await flow.app.accounts.setGroups('alice', ['admins'])
  const { jar, tokens } = await signedInTokens(flow)
  t.equal((await getPage(flow.app, '/console', cookie(tokens.access_token))).statusCode, 303, 'an application\'s token: as if not signed in')
  t.equal((await getPage(flow.app, '/console', jar.header())).statusCode, 200, 'alice\'s own sign-in')
})

t.test('failed webhook deliveries: listed, and retried with an audit event', async (t) => {
  const closed = await freePort()
  const { app, admin } = await setUp(t, 'real', { webhooks: fastWebhooks([`http://127.0.0.1:${closed}/hook`], newWebhookSecret(), { retryWindowMs: 1 }) })
  await postForm(app, '/console/accounts/alice/disable', admin, { confirm: 'yes' })
  await waitFor('a failed delivery', async () => (await app.webhookOutbox.list({ status: 'failed', limit: 10 })).length > 0, { timeoutMs: 20_000 })
  const [failed] = await app.webhookOutbox.list({ status: 'failed', limit: 10 })
  const page = await getPage(app, '/console/webhooks', admin)
  t.equal(page.statusCode, 200)
  t.match(page.body, `/console/webhooks/${failed?.id ?? ''}/retry`)
  const retried = await postForm(app, `/console/webhooks/${failed?.id ?? ''}/retry`, admin)
  t.equal(retried.statusCode, 303)
  t.equal(retried.headers.location, '/console/webhooks?done=retried')
  await app.backends.audit.flush()
  t.match(await app.backends.audit.list({ event: 'webhook.retry' }), [{ outcome: `retried:${failed?.id ?? ''}`, ...ACTED }])
  t.equal((await postForm(app, '/console/webhooks/999999/retry', admin)).statusCode, 404)
  t.equal((await postForm(app, `/console/webhooks/${failed?.id ?? ''}/retry`, admin, {}, { 'sec-fetch-site': 'cross-site' })).statusCode, 403)
})

t.test('no webhook receivers: the page says so', async (t) => {
  const { app, admin } = await setUp(t)
  t.match((await getPage(app, '/console/webhooks', admin)).body, /id="webhooks-off"/)
})
