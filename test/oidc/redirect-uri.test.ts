import t, { type Test } from 'tap'
import * as oidc from 'openid-client'
import type { BackendKind } from '../support/app.js'
import { rejection } from '../support/rejection.js'
import { Jar, REDIRECT, setUp, signedInTokens, pkceRequest, authorize, PASSWORD } from './support.js'

/*
 * A redirect_uri must equal one the client registered, character for character (api-contract:
 * "otherwise an error page, never a redirect"): the provider would otherwise hand the code — or
 * the error, with the state — to whoever named the address. Every near miss an attacker or a
 * misconfigured app would send is answered by the service's own error page, 400, with no
 * Location at all, to a browser that is signed in (the case where a code would be issued).
 */

const REGISTERED = 'https://app.example.org:8443/callback'

const VARIANTS: ReadonlyArray<[string, string]> = [
  ['a trailing slash', 'https://app.example.org:8443/callback/'],
  ['another port', 'https://app.example.org:8444/callback'],
  ['no port', 'https://app.example.org/callback'],
  ['the host in another case', 'https://APP.example.org:8443/callback'],
  ['the path in another case', 'https://app.example.org:8443/Callback'],
  ['an extra query', 'https://app.example.org:8443/callback?next=/admin'],
  ['a fragment', 'https://app.example.org:8443/callback#x'],
  ['an empty fragment', 'https://app.example.org:8443/callback#'],
  ['http for https', 'http://app.example.org:8443/callback'],
  ['a prefix of it', 'https://app.example.org:8443/call'],
  ['it with a suffix', 'https://app.example.org:8443/callbackx'],
  ['a path below it', 'https://app.example.org:8443/callback/evil'],
  ['a host that ends like it', 'https://app.example.org.evil.example:8443/callback'],
  ['userinfo before the host', 'https://evil@app.example.org:8443/callback'],
  ['a percent-encoded letter', 'https://app.example.org:8443/%63allback'],
  ['a dot segment', 'https://app.example.org:8443/x/../callback'],
  ['a loopback one on another port', 'http://127.0.0.1:10/callback'],
  ['a loopback one by name', 'http://localhost:9/callback']
]

/** The service's error page: HTML with the sign-in pages' headers, nothing of the request in it. */
function assertErrorPage (t: Test, response: Response, body: string, echoed: readonly string[], what: string): void {
  t.equal(response.status, 400, `${what}: 400`)
  t.equal(response.headers.get('location'), null, `${what}: no Location, to it or anywhere`)
  t.match(response.headers.get('content-type'), /^text\/html; charset=utf-8/, `${what}: a page`)
  t.match(response.headers.get('content-security-policy'), /default-src 'none'.*frame-ancestors 'none'/, `${what}: the sign-in pages' CSP`)
  t.notMatch(response.headers.get('content-security-policy'), /unsafe-inline/, `${what}: nothing inline`)
  t.equal(response.headers.get('x-frame-options'), 'DENY', `${what}: never framed`)
  t.equal(response.headers.get('cache-control'), 'no-store', `${what}: not cached`)
  t.notMatch(body, /<script>|<style|\sstyle=/, `${what}: no inline script or style`)
  t.match(body, '<link rel="stylesheet" href="/auth/signin/assets/signin.css">', `${what}: the sign-in pages' style`)
  for (const value of echoed) {
    t.notOk(body.includes(value) || body.includes(encodeURI(value)), `${what}: ${value} is not echoed`)
  }
}

function redirectContract (t: Test, kind: BackendKind): void {
  t.test('a redirect_uri that is not a registered one, exactly: the error page, never a redirect', async (t) => {
    const flow = await setUp(t, kind, { redirectUris: [REDIRECT, REGISTERED] })
    const { base, config } = flow
    // Signed in, with a provider session: a good request would come straight back with a code.
    const { jar } = await signedInTokens(flow)
    const state = oidc.randomState()
    const good = await pkceRequest(config, { redirect_uri: REGISTERED, state })
    const straight = await fetch(good.url, { redirect: 'manual', headers: { cookie: jar.header() } })
    t.equal(straight.status, 303, 'the registered one: a redirect')
    t.match(straight.headers.get('location'), new RegExp(`^${REGISTERED}\\?code=`), 'straight to it with a code')

    for (const [what, variant] of VARIANTS) {
      const { url } = await pkceRequest(config, { redirect_uri: variant, state })
      const response = await fetch(url, { redirect: 'manual', headers: { cookie: jar.header() } })
      const body = await response.text()
      assertErrorPage(t, response, body, [variant, state], what)
      t.match(body, 'an address it has not registered', `${what}: says what went wrong`)
      t.match(body, 'invalid_redirect_uri', `${what}: the error's code for the app's operators`)
    }

    // The authorization endpoint takes GET only: a form POST is no way around the rule.
    const form = new URLSearchParams([...good.url.searchParams])
    form.set('redirect_uri', `${REGISTERED}/`)
    const posted = await fetch(good.url.origin + good.url.pathname, { method: 'POST', redirect: 'manual', headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded', origin: base }, body: form })
    t.equal(posted.status, 404, 'a POST: not served')
    t.equal(posted.headers.get('location'), null, 'a POST: no redirect')

    // None at all is refused too: the provider does not pick one for the client.
    const none = new URL(good.url)
    none.searchParams.delete('redirect_uri')
    const missing = await fetch(none, { redirect: 'manual', headers: { cookie: jar.header() } })
    assertErrorPage(t, missing, await missing.text(), [state], 'no redirect_uri')

    // An unknown client: nowhere to send anyone.
    const stranger = new URL(good.url)
    stranger.searchParams.set('client_id', 'not-a-client')
    const unknown = await fetch(stranger, { redirect: 'manual', headers: { cookie: jar.header() } })
    const unknownBody = await unknown.text()
    assertErrorPage(t, unknown, unknownBody, [state, 'not-a-client'], 'an unknown client')
    t.match(unknownBody, 'not registered with this service', 'an unknown client: says so')

    // An interaction that is gone (expired, finished, another browser's): the same page, not a 500.
    const stale = await fetch(`${base}/auth/oidc/interaction/gone-interaction-uid`, { redirect: 'manual', headers: { cookie: jar.header() } })
    const staleBody = await stale.text()
    assertErrorPage(t, stale, staleBody, ['gone-interaction-uid'], 'a stale interaction')
    t.match(staleBody, 'This sign-in has expired or was already used', 'a stale interaction: says so')
  })

  t.test('the code exchange holds the code to the redirect_uri it was issued for', async (t) => {
    const { base, config } = await setUp(t, kind)
    const { url, verifier, state } = await pkceRequest(config)
    const back = await authorize(base, new Jar(), url, { username: 'alice', password: PASSWORD })
    // openid-client sends the callback's address as the exchange's redirect_uri: here one with a trailing slash.
    const elsewhere = new URL(back)
    elsewhere.pathname = `${elsewhere.pathname}/`
    const refused = await rejection(oidc.authorizationCodeGrant(config, elsewhere, { pkceCodeVerifier: verifier, expectedState: state }))
    t.match(refused, { error: 'invalid_grant' }, 'another redirect_uri: invalid_grant')
    const tokens = await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state })
    t.ok(tokens.access_token, 'the refusal did not consume the code: the right one still exchanges it')
  })
}

t.test('Postgres and Redis', async (t) => { redirectContract(t, 'real') })
t.test('embedded default', async (t) => { redirectContract(t, 'embedded') })
