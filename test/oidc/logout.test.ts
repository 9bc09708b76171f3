import t, { type Test } from 'tap'
import * as oidc from 'openid-client'
import type { BackendKind } from '../support/app.js'
import { authenticate, browser, codeFlow, discover, formOf, PASSWORD, POST_LOGOUT, REDIRECT, startBackchannelReceiver, startProvider } from './relying-party.js'

/*
 * RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0), driven by openid-client's
 * buildEndSessionUrl: the person confirms on the service's page, is signed out of the service too
 * (a Logout of the browser's AuthToken1, so every token the sign-in gave out ends at once), every
 * client of the session with a back-channel URI is sent one logout token, and the browser goes back
 * to the registered post-logout URI. One not registered is never redirected to.
 */

function logoutContract (t: Test, kind: BackendKind): void {
  t.test('the person confirms, is signed out of the service and every client, and goes back to the registered URI', async (t) => {
    const provider = await startProvider(t, kind)
    const { app, base, issuer } = provider
    const receiver = await startBackchannelReceiver(t, issuer)
    const grafana = await app.oidcClients.create({ name: 'Grafana', redirectUris: [REDIRECT], postLogoutRedirectUris: [POST_LOGOUT], backchannelLogoutUri: receiver.url }, { userAgent: 'test' })
    const gitlab = await app.oidcClients.create({ name: 'GitLab', redirectUris: [REDIRECT] }, { userAgent: 'test' })
    receiver.audience = [grafana.client.clientId]
    const grafanaRp = await discover(provider, grafana.client.clientId, grafana.secret)
    const gitlabRp = await discover(provider, gitlab.client.clientId, gitlab.secret)
    t.ok(grafanaRp.serverMetadata().end_session_endpoint, 'discovery names the end-session endpoint')
    t.equal(grafanaRp.serverMetadata().backchannel_logout_supported, true)

    const person = browser(base, { username: 'alice', password: PASSWORD })
    const tokens = await codeFlow(grafanaRp, person)
    const other = await codeFlow(gitlabRp, person)
    const sid = tokens.claims()?.sid
    t.type(sid, 'string', 'the ID token carries the session id a logout token will name')
    await app.backends.audit.flush()
    t.same((await app.backends.audit.list({ event: 'oidc.authorized' })).map((event) => event.outcome).sort(),
      [`code:${grafana.client.clientId}`, `code:${gitlab.client.clientId}`].sort(), 'each code handed out is an oidc.authorized event (single sign-on too)')

    const state = oidc.randomState()
    const url = oidc.buildEndSessionUrl(grafanaRp, { id_token_hint: tokens.id_token ?? '', post_logout_redirect_uri: POST_LOGOUT, state })
    const asked = await person.go(url)
    t.equal(asked.status, 200, 'a page asks first')
    t.match(asked.html, /<strong>Grafana<\/strong> asks to sign you out of <strong>alice<\/strong>/)
    t.notMatch(asked.html, /<script|\son[a-z]+=/i, 'no script: the form works without one')
    t.match(asked.headers.get('content-security-policy'), /form-action 'self' http:\/\/127\.0\.0\.1:9(;|$)/, 'the form may lead to the client\'s post-logout origin, and nowhere else')
    t.equal(asked.headers.get('x-frame-options'), 'DENY')
    t.match(await authenticate(app, tokens.access_token), { status: 0 }, 'nothing ended before the person confirms')

    const confirm = formOf(asked.html)
    t.match(confirm.fields, { logout: 'yes' })
    const back = await person.go(new URL(confirm.action, base), confirm.fields)
    t.equal(back.url.origin + back.url.pathname, POST_LOGOUT, 'back at the registered post-logout URI')
    t.equal(back.url.searchParams.get('state'), state, 'with the client\'s state')
    t.notOk(person.jar.cookies.has('AuthToken1'), 'the sign-in cookie cleared')

    t.match(await authenticate(app, tokens.access_token), { status: 403 }, 'the access token ended at once')
    t.match(await authenticate(app, other.access_token), { status: 403 }, 'and the other client\'s, from the same sign-in')
    t.match(await oidc.refreshTokenGrant(gitlabRp, other.refresh_token ?? '').then(() => undefined, (error: unknown) => error), { error: 'invalid_grant' })
    await app.backends.audit.flush()
    const alice = await app.backends.users.findByUsername('alice')
    t.match(await app.backends.audit.list({ event: 'logout' }), [{ event: 'logout', accountId: alice?.id, outcome: 'terminated' }], 'a Logout of the service, in the audit trail')

    const [logout] = await receiver.waitFor(1)
    t.match(logout?.claims, { iss: issuer, aud: grafana.client.clientId, sid }, 'Grafana got a logout token for that session')
    t.type(logout?.claims.iat, 'number')
    t.type(logout?.claims.jti, 'string')
    // The sign-out also ended the sign-in token, which the back-channel hears of on the feed: the session is gone by then.
    await new Promise((resolve) => setTimeout(resolve, 400))
    t.equal(receiver.received.length, 1, 'one logout token, not two')
    t.same(receiver.refused, [], 'nothing invalid reached the client')

    // Asked again, no one signed in: nothing to confirm, and no script to post the form on.
    const again = await person.go(oidc.buildEndSessionUrl(grafanaRp, { id_token_hint: tokens.id_token ?? '', post_logout_redirect_uri: POST_LOGOUT }))
    t.equal(again.status, 200)
    t.match(again.html, /No one is signed in here for <strong>Grafana<\/strong>/)
    t.notMatch(again.html, /<script|\son[a-z]+=/i, 'no script')
    const onward = formOf(again.html)
    t.equal((await person.go(new URL(onward.action, base), onward.fields)).url.href, POST_LOGOUT, 'the button goes back to the client')
    const bare = await person.go(grafanaRp.serverMetadata().end_session_endpoint ?? '')
    const done = await person.go(new URL(formOf(bare.html).action, base), formOf(bare.html).fields)
    t.equal(done.status, 200, 'without a client: the service\'s own page')
    t.match(done.html, /You are signed out/)
    t.equal(receiver.received.length, 1, 'and no client told anything more')
  })

  t.test('a logout token the client refuses at the confirmation is sent again', async (t) => {
    const provider = await startProvider(t, kind, { oidc: { backchannelRetryDelaysMs: [50] } })
    const { app, base, issuer } = provider
    const receiver = await startBackchannelReceiver(t, issuer)
    const { client, secret } = await app.oidcClients.create({ name: 'Grafana', redirectUris: [REDIRECT], postLogoutRedirectUris: [POST_LOGOUT], backchannelLogoutUri: receiver.url }, { userAgent: 'test' })
    receiver.audience = [client.clientId]
    receiver.answers = [503, 204]
    const rp = await discover(provider, client.clientId, secret)
    const person = browser(base, { username: 'alice', password: PASSWORD })
    const tokens = await codeFlow(rp, person)
    const asked = await person.go(oidc.buildEndSessionUrl(rp, { id_token_hint: tokens.id_token ?? '', post_logout_redirect_uri: POST_LOGOUT }))
    const confirm = formOf(asked.html)
    t.equal((await person.go(new URL(confirm.action, base), confirm.fields)).url.href, POST_LOGOUT, 'the person is not held up by the client\'s refusal')
    const got = await receiver.waitFor(2)
    t.same(got.map((token) => token.claims.sid), [tokens.claims()?.sid, tokens.claims()?.sid], 'refused once, sent again for the same session')
    t.not(got[0]?.claims.jti, got[1]?.claims.jti, 'a new token each time')
  })

  t.test('an unregistered post_logout_redirect_uri is never redirected to, and signs nobody out', async (t) => {
    const provider = await startProvider(t, kind)
    const { app, base } = provider
    const { client, secret } = await app.oidcClients.create({ name: 'Grafana', redirectUris: [REDIRECT], postLogoutRedirectUris: [POST_LOGOUT] }, { userAgent: 'test' })
    const rp = await discover(provider, client.clientId, secret)
    const person = browser(base, { username: 'alice', password: PASSWORD })
    const tokens = await codeFlow(rp, person)
    for (const elsewhere of ['http://127.0.0.1:9/elsewhere', 'http://127.0.0.1:9/signed-out/', 'http://attacker.example/signed-out', `${POST_LOGOUT}?x=1`]) {
      const answer = await person.go(oidc.buildEndSessionUrl(rp, { id_token_hint: tokens.id_token ?? '', post_logout_redirect_uri: elsewhere }))
      t.equal(answer.url.origin, base, `${elsewhere}: the browser stays at the service`)
      t.equal(answer.status, 400, `${elsewhere}: an error page`)
    }
    t.ok(person.jar.cookies.has('AuthToken1'))
    t.match(await authenticate(app, tokens.access_token), { status: 0 }, 'still signed in')
  })
}

t.test('Postgres and Redis', async (t) => { logoutContract(t, 'real') })
t.test('embedded default', async (t) => { logoutContract(t, 'embedded') })
