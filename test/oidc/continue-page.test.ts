import t from 'tap'
import * as oidc from 'openid-client'
import { readOidc } from '../../src/config/parts/oidc.js'
import { freePort } from '../../support/processes.js'
import { buildTestApp } from '../support/app.js'

/*
 * A sign-in made on the service's page goes back to the client through a page of the service's
 * own (src/oidc/continue-page.ts), not by redirects alone: the sign-in page's `form-action`
 * holds for every redirect after its form's POST, and a client's redirect_uri is on no list of
 * it (Chromium stops there: test/integration/browser/oidc-apache.test.ts). The browser says where
 * the chain began with Sec-Fetch-Site; a chain from elsewhere goes on by 303 as before.
 */

const PASSWORD = 'a long enough passphrase 1'
const REDIRECT = 'http://127.0.0.1:9/callback'

/** A browser's cookies, by name (paths ignored: sending one more cookie harms nothing here). */
class Jar {
  readonly cookies = new Map<string, string>()
  take (response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';')
      const equals = pair.indexOf('=')
      const name = pair.slice(0, equals).trim()
      const value = pair.slice(equals + 1).trim()
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
  }

  header (): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
  }
}

t.test('the sign-in form\'s chain ends at a page that moves on to the provider; from elsewhere, a 303', async (t) => {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const { app } = await buildTestApp(t, 'embedded', { oidc: readOidc({ AUTH_OIDC_ISSUER: `${base}/oidc` }).oidc })
  await app.listen({ port, host: '127.0.0.1' })
  await app.accounts.add('alice', PASSWORD, false)
  const { client, secret } = await app.oidcClients.create({ name: 'App', redirectUris: [REDIRECT] }, { userAgent: 'test' })
  const config = await oidc.discovery(new URL(`${base}/oidc`), client.clientId, secret, undefined, { execute: [oidc.allowInsecureRequests] })
  const jar = new Jar()
  const get = async (url: string, headers: Record<string, string> = {}): Promise<Response> => {
    const response = await fetch(new URL(url, base), { redirect: 'manual', headers: { cookie: jar.header(), ...headers } })
    jar.take(response)
    return response
  }
  const verifier = oidc.randomPKCECodeVerifier()
  const state = oidc.randomState()
  const authorization = async (): Promise<URL> => oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT, scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state
  })

  // The client's link, then the provider's interaction, then the sign-in page.
  const interaction = (await get((await authorization()).href)).headers.get('location') ?? ''
  t.match(interaction, /^\/auth\/oidc\/interaction\//)
  const signInPage = (await get(interaction)).headers.get('location') ?? ''
  t.match(signInPage, /^\/auth\/signin\?rd=/)
  const posted = await fetch(`${base}/auth/signin`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: jar.header(), origin: base, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ username: 'alice', password: PASSWORD, rd: new URL(signInPage, base).searchParams.get('rd') ?? '' })
  })
  jar.take(posted)
  t.equal(posted.headers.get('location'), `${base}${interaction}`, 'the form\'s POST goes back to the interaction')

  // Had the chain begun elsewhere (another site's link): on by 303, as oidc-provider answers.
  const elsewhere = await get(interaction, { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' })
  t.equal(elsewhere.status, 303, 'from another site: a redirect')
  const resume = `${base}/oidc/auth/${interaction.slice('/auth/oidc/interaction/'.length)}`
  t.equal(elsewhere.headers.get('location'), resume, 'to the provider\'s resume URL')

  // As Chromium follows the form's 303: the chain began on this origin's page.
  const page = await get(interaction, { 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'navigate' })
  t.equal(page.status, 200, 'a page, not a redirect')
  t.equal(page.headers.get('location'), null)
  t.match(page.headers.get('content-type'), /^text\/html/)
  t.match(page.headers.get('content-security-policy'), /form-action 'none'/, 'the page itself posts nowhere')
  t.equal(page.headers.get('cache-control'), 'no-store')
  const html = await page.text()
  const refresh = /<meta http-equiv="refresh" content="0;url=([^"]+)">/.exec(html)?.[1] ?? ''
  t.equal(refresh, resume, 'it moves on to the provider\'s resume URL, on this origin')
  t.match(html, `<a href="${refresh}">Continue</a>`, 'and links there without JavaScript or refresh')

  const back = (await get(refresh, { 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'navigate' })).headers.get('location') ?? ''
  t.ok(back.startsWith(`${REDIRECT}?code=`), 'the provider sends the browser to the client with a code')
  const tokens = await oidc.authorizationCodeGrant(config, new URL(back), { pkceCodeVerifier: verifier, expectedState: state })
  t.ok(tokens.access_token, 'and the code is good')

  // Single sign-on: from the client (cross-site), signed in already: no page on the way.
  let next = (await authorization()).href
  const pages: number[] = []
  while (!next.startsWith(REDIRECT)) {
    const answer = await get(next, { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' })
    pages.push(answer.status)
    next = new URL(answer.headers.get('location') ?? '', base).href
  }
  t.ok(pages.length > 0 && pages.every((status) => status === 303), `signed in already, from a client: redirects only (${pages.join(', ')})`)
  t.ok(new URL(next).searchParams.get('code'), 'back at the client with a code')
})
