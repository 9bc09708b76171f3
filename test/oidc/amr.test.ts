import t, { type Test } from 'tap'
import * as oidc from 'openid-client'
import type { BackendKind } from '../support/app.js'
import { enrollTotp } from '../support/second-factor.js'
import { createSoftPasskey, type SoftPasskey } from '../signin/soft-authenticator.js'
import { totpAt } from '../../src/totp/rfc6238.js'
import { authorize, browse, hiddenFields, Jar, PASSWORD, pkceRequest, setUp, type Flow } from './support.js'

/*
 * The ID token's amr says how the person signed in (RFC 8176's names, as the contract lists them),
 * recorded by the Login that made the sign-in, not guessed from the account: a password `pwd`;
 * a password and the code step `pwd,otp`; a passkey `hwk` — also for an account with a second
 * factor, which a passkey sign-in does not ask for. Both ways the provider takes a sign-in: the
 * browser signed in already (single sign-on) and a sign-in made on the way.
 */

async function json (base: string, jar: Jar, path: string, body: unknown): Promise<Response> {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: jar.header(), origin: base, 'sec-fetch-site': 'same-origin', 'content-type': 'application/json' },
    body: JSON.stringify(body)
  })
  jar.take(response)
  return response
}

/** alice's passkey, registered by her signed-in browser with her password (as the account page does). */
async function registerPasskey (base: string): Promise<SoftPasskey> {
  const jar = new Jar()
  const login = await fetch(`${base}/auth/Login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'alice', password: PASSWORD }) })
  const { token } = await login.json() as { token: string }
  jar.cookies.set('AuthToken1', token)
  const passkey = createSoftPasskey()
  const options = (await (await json(base, jar, '/auth/passkeys/options', { current_password: PASSWORD })).json() as { options: { challenge: string, rp: { id: string } } }).options
  const registered = await json(base, jar, '/auth/passkeys', { response: passkey.register(options, base) })
  if (registered.status !== 200) throw new Error(`the passkey was refused: ${await registered.text()}`)
  return passkey
}

/** A browser signed in with the passkey at the service's sign-in page. */
async function passkeySignIn (base: string, passkey: SoftPasskey): Promise<Jar> {
  const jar = new Jar()
  const options = (await (await json(base, jar, '/auth/signin/passkey/options', {})).json() as { options: { challenge: string, rpId: string } }).options
  const signedIn = await json(base, jar, '/auth/signin/passkey', { response: passkey.assert(options, base) })
  if (signedIn.status !== 200) throw new Error(`the passkey sign-in was refused: ${await signedIn.text()}`)
  return jar
}

/** The amr of the ID token a code flow from this browser gets, signing in on the way with `signIn` when given. */
async function amrOf (flow: Flow, jar: Jar, signIn?: (arrival: Awaited<ReturnType<typeof browse>>) => Promise<URL>): Promise<unknown> {
  const { url, verifier, state } = await pkceRequest(flow.config)
  const back = signIn === undefined ? await authorize(flow.base, jar, url) : await signIn(await browse(flow.base, jar, url, { username: 'alice', password: PASSWORD }))
  const tokens = await oidc.authorizationCodeGrant(flow.config, back, { pkceCodeVerifier: verifier, expectedState: state })
  return tokens.claims()?.amr
}

function amrContract (t: Test, kind: BackendKind): void {
  t.test('amr: pwd, pwd and otp, hwk, as the sign-in was made', async (t) => {
    const flow = await setUp(t, kind)
    const { app, base } = flow
    const passkey = await registerPasskey(base)

    t.same(await amrOf(flow, await passkeySignIn(base, passkey)), ['hwk'], 'a browser signed in with a passkey: hwk')

    const secret = await enrollTotp(app, 'alice', PASSWORD)
    const jar = new Jar()
    t.same(await amrOf(flow, jar, async (arrival) => {
      // The password was right; the code step's page, its form posted with its hidden fields.
      if (!('page' in arrival) || !arrival.page.body.includes('name="otp"')) throw new Error(`no code step after the password: ${JSON.stringify(arrival).slice(0, 300)}`)
      const form = new URLSearchParams({ ...hiddenFields(arrival.page.body), otp: totpAt(secret, Date.now()) })
      const posted = await fetch(`${base}/auth/signin/code`, { method: 'POST', redirect: 'manual', headers: { cookie: jar.header(), origin: base, 'content-type': 'application/x-www-form-urlencoded' }, body: form })
      jar.take(posted)
      const location = posted.headers.get('location')
      if (location === null) throw new Error(`the code step answered ${posted.status} without a redirect`)
      return await authorize(base, jar, new URL(location, base))
    }), ['pwd', 'otp'], 'a password and the code step on the way: pwd, otp')

    t.same(await amrOf(flow, await passkeySignIn(base, passkey)), ['hwk'],
      'an account with a second factor signed in with a passkey: hwk (no code was asked, so no otp)')
    t.same(await amrOf(flow, jar), ['pwd', 'otp'], 'the browser signed in with the code, again (single sign-on): pwd, otp')
  })
}

t.test('Postgres + Redis', async (t) => { amrContract(t, 'real') })
t.test('embedded: PGlite + in-process store', async (t) => { amrContract(t, 'embedded') })
