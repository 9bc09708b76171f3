import t, { type Test } from 'tap'
import * as oidc from 'openid-client'
import type { BackendKind } from '../support/app.js'
import { authenticate, authorize, browse, Jar, PASSWORD, pkceRequest, REDIRECT, setUp } from './support.js'

/*
 * Single sign-on from the service's own sign-in (api-contract: "A browser already signed in
 * (AuthToken1 active) is not asked again"): a browser that signed in at /auth/signin, and never
 * met the provider, gets a code without a page, with prompt=none too; its tokens stand on that
 * sign-in and end with it.
 */

function ssoContract (t: Test, kind: BackendKind): void {
  t.test('signed in at the service, new to the provider: a code without a page (prompt=none too), tokens under that sign-in', async (t) => {
    const flow = await setUp(t, kind)
    const jar = new Jar()
    const signedIn = await fetch(`${flow.base}/auth/signin`, {
      method: 'POST', redirect: 'manual', headers: { origin: flow.base, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ username: 'alice', password: PASSWORD })
    })
    jar.take(signedIn)
    t.ok(jar.cookies.has('AuthToken1'), 'signed in at the service')
    t.notOk([...jar.cookies.keys()].some((name) => name.startsWith('_session')), 'no provider session yet')

    const { url, verifier, state } = await pkceRequest(flow.config, { prompt: 'none' })
    const arrival = await browse(flow.base, jar, url)
    t.ok('back' in arrival, 'back at the client with no page shown')
    const back = 'back' in arrival ? arrival.back : new URL(REDIRECT)
    t.ok(back.searchParams.get('code'), 'a code, prompt=none')
    const tokens = await oidc.authorizationCodeGrant(flow.config, back, { pkceCodeVerifier: verifier, expectedState: state })
    t.type(tokens.claims()?.auth_time, 'number', 'auth_time: the sign-in\'s')
    t.match(await authenticate(flow.app, tokens.access_token), { status: 0, kind: 'oidc' })

    const again = await authorize(flow.base, jar, (await pkceRequest(flow.config)).url)
    t.ok(again.searchParams.get('code'), 'and again, on the provider\'s session now')

    await fetch(`${flow.base}/auth/signout`, { method: 'POST', redirect: 'manual', headers: { cookie: jar.header(), origin: flow.base } })
    t.match(await authenticate(flow.app, tokens.access_token), { status: 403 }, 'ended with the sign-in it stood on')
  })
}

t.test('Postgres and Redis', async (t) => { ssoContract(t, 'real') })
t.test('embedded default', async (t) => { ssoContract(t, 'embedded') })
