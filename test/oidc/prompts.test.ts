import t, { type Test } from 'tap'
import { setTimeout } from 'node:timers/promises'
import * as oidc from 'openid-client'
import type { BackendKind } from '../support/app.js'
import { rejection } from '../support/rejection.js'
import { authenticate, authorize, browse, Jar, PASSWORD, pkceRequest, setUp, signedInTokens, signOut, type Flow } from './support.js'

/*
 * prompt and max_age, driven by openid-client (panva) on both backends. prompt=none never shows a
 * page: with no session it is `login_required` at the client's redirect_uri, with one a code, and
 * after a sign-out at the service `login_required` again (the provider's session stands on the
 * browser's sign-in). prompt=login and max_age send a signed-in browser to the sign-in form again;
 * until the person signs in there no code is issued, and the ID token's auth_time is the new
 * sign-in's. auth_time counts whole seconds: the waits below let a second pass between sign-ins.
 */

const ALICE = { username: 'alice', password: PASSWORD }

/** An authorization with the given parameters, its way followed (signing in when asked, if `signIn`), and openid-client's exchange of what came back. */
async function exchange (flow: Flow, jar: Jar, parameters: Record<string, string>, signIn?: typeof ALICE, maxAge?: number) {
  const { url, verifier, state } = await pkceRequest(flow.config, parameters)
  const back = await authorize(flow.base, jar, url, signIn)
  return await oidc.authorizationCodeGrant(flow.config, back, { pkceCodeVerifier: verifier, expectedState: state, ...(maxAge === undefined ? {} : { maxAge }) })
}

function promptContract (t: Test, kind: BackendKind): void {
  t.test('prompt=none: login_required without a session, a code with one, login_required after a sign-out', async (t) => {
    const flow = await setUp(t, kind)
    const none = await rejection(exchange(flow, new Jar(), { prompt: 'none' }))
    t.type(none, oidc.AuthorizationResponseError, 'openid-client: an authorization error at the redirect_uri')
    t.match(none, { error: 'login_required' }, 'no session: login_required')

    const { jar } = await signedInTokens(flow)
    const silent = await exchange(flow, jar, { prompt: 'none' })
    t.match(await authenticate(flow.app, silent.access_token), { status: 0, kind: 'oidc' }, 'a session: a code, and tokens, without a page')

    t.ok((await signOut(flow.base, jar)).status < 400, 'signed out at the service')
    t.ok([...jar.cookies.keys()].some((name) => name.startsWith('_session')), 'the provider\'s session cookie is still in the browser')
    const after = await rejection(exchange(flow, jar, { prompt: 'none' }))
    t.type(after, oidc.AuthorizationResponseError)
    t.match(after, { error: 'login_required' }, 'after the sign-out: login_required (the signed_out check)')
  })

  t.test('prompt=login and max_age: the sign-in form again, no code without it, and a later auth_time', async (t) => {
    const flow = await setUp(t, kind)
    const { jar, tokens } = await signedInTokens(flow)
    const firstTime = tokens.claims()?.auth_time ?? 0
    const signInToken = jar.cookies.get('AuthToken1')
    t.ok(signInToken, 'signed in at the service')
    await setTimeout(1100)

    // prompt=login: signed in or not, the form, and nothing for the client until it is used.
    const { url } = await pkceRequest(flow.config, { prompt: 'login' })
    const shown = await browse(flow.base, jar, url)
    if (!('page' in shown)) throw new Error('prompt=login went back to the client without a sign-in')
    t.equal(shown.page.url.pathname, '/auth/signin', 'the sign-in page, though signed in')
    t.equal(shown.page.status, 200)
    t.match(shown.page.body, 'The application asks you to sign in again.')
    t.match(shown.page.body, '<input type="hidden" name="prompt" value="login">', 'the form carries the prompt')
    t.match(shown.page.body, /name="username"[^>]*value="alice"/, 'the account signed in, filled in')
    const rd = shown.page.url.searchParams.get('rd') ?? ''
    t.match(rd, /^\/auth\/oidc\/interaction\//, 'back to the interaction after it')
    const skipped = await browse(flow.base, jar, new URL(rd, flow.base))
    t.ok('page' in skipped && skipped.page.url.pathname === '/auth/signin', 'the interaction again without signing in: the form again, no code')

    const again = await exchange(flow, jar, { prompt: 'login' }, ALICE)
    const secondTime = again.claims()?.auth_time ?? 0
    t.ok(secondTime > firstTime, `auth_time is the new sign-in's (${firstTime} -> ${secondTime})`)
    t.equal(jar.cookies.get('AuthToken1'), signInToken, 'the sign-in refreshed the browser\'s token, not a new one')
    t.match(await authenticate(flow.app, tokens.access_token), { status: 0 }, 'so what the first sign-in gave out still stands')

    // max_age: a sign-in older than asked is made again; one young enough is not.
    await setTimeout(2100)
    const stale = await pkceRequest(flow.config, { max_age: '1' })
    const asked = await browse(flow.base, jar, stale.url)
    t.ok('page' in asked && asked.page.url.pathname === '/auth/signin', 'max_age=1, signed in 2 s ago: the form')
    const aged = await exchange(flow, jar, { max_age: '1' }, ALICE, 1)
    const thirdTime = aged.claims()?.auth_time ?? 0
    t.ok(thirdTime > secondTime, `max_age: auth_time is the new sign-in's (${secondTime} -> ${thirdTime}), as openid-client checked`)
    const young = await exchange(flow, jar, { max_age: '3600' }, undefined, 3600)
    t.equal(young.claims()?.auth_time, thirdTime, 'max_age=3600: straight back, the same sign-in')
  })
}

t.test('Postgres and Redis', async (t) => { promptContract(t, 'real') })
t.test('embedded default', async (t) => { promptContract(t, 'embedded') })
