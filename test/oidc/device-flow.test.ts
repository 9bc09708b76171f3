import t, { type Test } from 'tap'
import * as oidc from 'openid-client'
import type { BackendKind } from '../support/app.js'
import { fastWebhooks, newWebhookSecret } from '../webhooks/support.js'
import { startWebhookReceiver } from '../../support/webhook-receiver.js'
import { authenticate, browser, discover, formOf, PASSWORD, REDIRECT, startProvider } from './relying-party.js'

/*
 * The device authorization grant (RFC 8628) for a public command-line client, driven by
 * openid-client (panva): the device asks for a code and polls; the person's browser (fetch and a
 * cookie jar) enters the code on the service's page, checks it, signs in on the service's sign-in
 * page, and allows. The access token is a token of the service (Authenticate: kind oidc) and ends
 * when the person signs out; the authorization is an `oidc.authorized` event, sent as a webhook
 * with its client.
 */

const POLL = { interval: 1 }

function pageChecks (t: Test, landing: { status: number, headers: Headers, html: string }, what: string): void {
  t.equal(landing.status, 200, `${what}: a page`)
  t.match(landing.headers.get('content-security-policy'), /default-src 'none'; script-src 'self'/, `${what}: the sign-in pages' strict policy`)
  t.equal(landing.headers.get('x-frame-options'), 'DENY', `${what}: never framed`)
  t.notMatch(landing.html, /<script|\son[a-z]+=/i, `${what}: no script at all (the form works without one)`)
  t.match(landing.html, /\/auth\/signin\/assets\/signin\.css/, `${what}: the sign-in pages' style`)
}

function deviceContract (t: Test, kind: BackendKind): void {
  t.test('a public client gets tokens for a person who allows it at the verification page; signing out ends them', async (t) => {
    const secret = newWebhookSecret()
    const hooks = await startWebhookReceiver(t, secret)
    const provider = await startProvider(t, kind, { config: { webhooks: fastWebhooks([hooks.url], secret) } })
    const { app, base } = provider
    const { client, secret: none } = await app.oidcClients.create({ name: 'deploy-cli', redirectUris: [REDIRECT], public: true }, { userAgent: 'test' })
    t.equal(none, undefined, 'a public client has no secret')
    const config = await discover(provider, client.clientId, undefined)
    t.ok(config.serverMetadata().device_authorization_endpoint, 'discovery names the device endpoint')

    const device = await oidc.initiateDeviceAuthorization(config, { scope: 'openid groups' })
    t.equal(device.verification_uri, `${base}/oidc/device`)
    t.match(device.user_code, /^[A-Z]{4}-[A-Z]{4}$/, 'a code a person can read and type')
    const polled = oidc.pollDeviceAuthorizationGrant(config, { ...device, ...POLL })

    const person = browser(base, { username: 'alice', password: PASSWORD })
    const entry = await person.go(device.verification_uri)
    pageChecks(t, entry, 'the code entry')
    t.match(entry.html, /Enter the code your device/)

    // A wrong code: the page again, saying so.
    const form = formOf(entry.html)
    const wrong = await person.go(new URL(form.action, base), { ...form.fields, user_code: 'BCDF-GHJK' })
    pageChecks(t, wrong, 'a wrong code')
    t.match(wrong.html, /That code is not right/)

    // The code as a person types it (lower case, no dash): the confirmation shows the client and the code.
    const typed = device.user_code.replace('-', '').toLowerCase()
    const confirm = await person.go(new URL(form.action, base), { ...formOf(wrong.html).fields, user_code: typed })
    pageChecks(t, confirm, 'the confirmation')
    t.match(confirm.html, /<strong>deploy-cli<\/strong> asks to use your account/)
    t.match(confirm.html, new RegExp(`id="user-code">${device.user_code}<`), 'the code shown to compare with the device')
    t.match(confirm.html, /Sign in and allow/, 'not signed in yet: the sign-in comes next')

    const allow = formOf(confirm.html, 0)
    t.equal(allow.fields.confirm, 'yes')
    const done = await person.go(new URL(allow.action, base), allow.fields)
    pageChecks(t, done, 'the success page')
    t.match(done.html, /Device connected/)
    t.ok(person.jar.cookies.has('AuthToken1'), 'signed in on the service\'s own page on the way')

    const tokens = await polled
    const alice = await app.backends.users.findByUsername('alice')
    t.match(tokens.claims(), { sub: alice?.id, preferred_username: 'alice', groups: ['ops'], aud: client.clientId }, 'the ID token')
    t.ok(tokens.refresh_token, 'a refresh token')
    t.match(await authenticate(app, tokens.access_token), { status: 0, kind: 'oidc', client_id: client.clientId, username: 'alice', groups: ['ops'] }, 'Authenticate takes the access token')

    await app.backends.audit.flush()
    const events = await app.backends.audit.list({ event: 'oidc.authorized' })
    t.match(events, [{ event: 'oidc.authorized', username: 'alice', accountId: alice?.id, outcome: `device:${client.clientId}` }], 'the authorization is in the audit trail')
    await hooks.waitFor('oidc.authorized', (received) => received.some((event) => event.type === 'oidc.authorized'))
    t.match(hooks.events.find((event) => event.type === 'oidc.authorized')?.data, { account_id: alice?.id, username: 'alice', client_id: client.clientId, outcome: `device:${client.clientId}` }, 'and sent as a webhook with data.client_id')

    const out = await person.go('/auth/signout', {})
    t.equal(out.url.pathname, '/auth/signin', 'signed out')
    t.match(await authenticate(app, tokens.access_token), { status: 403 }, 'the device\'s access token ended with the sign-in')
    const refused = await oidc.refreshTokenGrant(config, tokens.refresh_token ?? '').then(() => undefined, (error: unknown) => error)
    t.match(refused, { error: 'invalid_grant' }, 'and its refresh token')
  })

  t.test('the verification link carries the code; a signed-in person allows at once; denying leaves the device without tokens', async (t) => {
    const provider = await startProvider(t, kind)
    const { app, base } = provider
    const { client } = await app.oidcClients.create({ name: 'kubectl', redirectUris: [REDIRECT], public: true }, { userAgent: 'test' })
    const config = await discover(provider, client.clientId, undefined)
    const person = browser(base, { username: 'alice', password: PASSWORD })
    await person.go('/auth/signin?rd=/auth/account')
    t.ok(person.jar.cookies.has('AuthToken1'), 'signed in first')

    const denied = await oidc.initiateDeviceAuthorization(config, { scope: 'openid' })
    const deniedPoll = oidc.pollDeviceAuthorizationGrant(config, { ...denied, ...POLL }).then(() => undefined, (error: unknown) => error)
    const filled = await person.go(denied.verification_uri_complete ?? '')
    pageChecks(t, filled, 'the link\'s entry page')
    t.match(formOf(filled.html).fields, { user_code: denied.user_code }, 'the code filled in, for the person to check and go on (no script posts it)')
    const confirm = await person.go(new URL(formOf(filled.html).action, base), formOf(filled.html).fields)
    t.match(confirm.html, /asks to use your account <strong>alice<\/strong>/, 'signed in: the page says as whom')
    const deny = formOf(confirm.html, 1)
    t.equal(deny.fields.abort, 'yes')
    const after = await person.go(new URL(deny.action, base), deny.fields)
    pageChecks(t, after, 'after denying')
    t.match(after.html, /Denied: the device was not signed in/)
    t.match(await deniedPoll, { error: 'access_denied' }, 'the device hears it was denied')

    const allowed = await oidc.initiateDeviceAuthorization(config, { scope: 'openid' })
    const polled = oidc.pollDeviceAuthorizationGrant(config, { ...allowed, ...POLL })
    const page = await person.go(allowed.verification_uri_complete ?? '')
    const again = await person.go(new URL(formOf(page.html).action, base), formOf(page.html).fields)
    t.match(again.html, />Allow</)
    const allow = formOf(again.html, 0)
    const done = await person.go(new URL(allow.action, base), allow.fields)
    t.match(done.html, /Device connected/, 'allowed without another sign-in')
    const tokens = await polled
    t.match(await authenticate(app, tokens.access_token), { status: 0, kind: 'oidc', client_id: client.clientId })

    const used = await person.go(new URL(allow.action, base), allow.fields)
    t.match(used.html, /That code was used already|That did not work/, 'a code is used once')
  })
}

t.test('Postgres and Redis', async (t) => { deviceContract(t, 'real') })
t.test('embedded default', async (t) => { deviceContract(t, 'embedded') })
