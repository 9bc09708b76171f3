import { existsSync } from 'node:fs'
import { mkdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { chromium, type Browser, type Page } from 'playwright-core'
import t, { type Test } from 'tap'
import { readOidc } from '../../../src/config/parts/oidc.js'
import { totpAt } from '../../../src/totp/rfc6238.js'
import { buildTestApp } from '../../support/app.js'
import { enrollTotp } from '../../support/second-factor.js'
import { startApacheOidc, type Upstream } from '../../support/gateways.js'
import { freePort } from '../../../support/processes.js'

/*
 * A relying party nobody here wrote, as a person meets it: Debian's Apache with mod_auth_openidc,
 * configured as the module's documentation says (deploy/apache-oidc.conf, as shipped), in front
 * of a page that shows the claims the module passes; headless Chromium (Debian's) opens that
 * page. Not signed in, the module sends it to the provider, the provider to the service's
 * sign-in page; the person types a password and, the account having a second factor, a code;
 * back at Apache, the page shows who and their groups. A person outside `ops` is refused where
 * the module's `Require claim groups:ops` holds. A sign-out at the service ends the access token
 * the module holds at once (Authenticate refuses it within a second), and the module's own session
 * through back-channel logout (the page asked for again sends the browser to sign in). Apache and its module
 * missing fail the file with the packages to install (test/support/gateways.ts). Screenshots go
 * to SCREENS_DIR (default /tmp/ats-screens).
 */

const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync']
const PASSWORD = 'a long enough passphrase 1'
const SCREENS = process.env.SCREENS_DIR ?? '/tmp/ats-screens'

if (!existsSync(CHROMIUM)) {
  t.fail(`no Chromium at ${CHROMIUM}: install Debian's (apt-get install chromium; bash .ci/run does it when missing)`)
} else {
  await run(t)
}

function escapeHtml (text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`)
}

/**
 * The app behind Apache: a page that says who the module says signed in (OIDC_CLAIM_* headers,
 * which Node reads in lower case), and keeps every request's headers for the test.
 */
async function startClaimsPage (t: Test): Promise<Upstream> {
  const seen: IncomingHttpHeaders[] = []
  const server: Server = createServer((request, response) => {
    seen.push(request.headers)
    request.resume()
    const claim = (name: string): string => {
      const value = request.headers[`oidc_claim_${name}`]
      return Array.isArray(value) ? value.join(',') : value ?? ''
    }
    const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Behind Apache</title></head>
<body style="font-family: sans-serif; margin: 2em">
<h1>Apache let you in</h1>
<p>Signed in through mod_auth_openidc as <strong id="user">${escapeHtml(claim('preferred_username'))}</strong>.</p>
<dl>
<dt>Path</dt><dd id="path">${escapeHtml(request.url ?? '')}</dd>
<dt>Groups (OIDC_CLAIM_groups)</dt><dd id="groups">${escapeHtml(claim('groups'))}</dd>
<dt>Subject (OIDC_CLAIM_sub)</dt><dd id="sub">${escapeHtml(claim('sub'))}</dd>
<dt>Methods (OIDC_CLAIM_amr)</dt><dd id="amr">${escapeHtml(claim('amr'))}</dd>
</dl></body></html>`
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => { await new Promise((resolve) => server.close(resolve)) })
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen }
}

async function run (t: Test): Promise<void> {
  await mkdir(SCREENS, { recursive: true })
  const port = await freePort()
  const serviceOrigin = `http://127.0.0.1:${port}`
  const issuer = `${serviceOrigin}/oidc`
  const { app } = await buildTestApp(t, 'real', { oidc: readOidc({ AUTH_OIDC_ISSUER: issuer }).oidc, cookieSecure: false })
  await app.listen({ port, host: '127.0.0.1' })

  await app.accounts.add('alice', PASSWORD, false)
  await app.accounts.setGroups('alice', ['ops', 'staff'])
  await app.accounts.add('bob', PASSWORD, false)
  await app.accounts.setGroups('bob', ['staff'])
  const secret = await enrollTotp(app, 'alice', PASSWORD)

  const upstream = await startClaimsPage(t)
  const apache = await startApacheOidc(t, {
    issuer,
    upstream,
    register: async (redirectUri) => {
      // The module's back-channel logout endpoint is its redirect URI with ?logout=backchannel (its documentation).
      const { client, secret } = await app.oidcClients.create({ name: 'Apache', redirectUris: [redirectUri], backchannelLogoutUri: `${redirectUri}?logout=backchannel` }, { userAgent: 'test' })
      if (secret === undefined) throw new Error('a confidential client has a secret')
      return { clientId: client.clientId, clientSecret: secret }
    }
  })

  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true, timeout: 60_000 })
  t.teardown(async () => { await browser.close() })
  async function newPage (t: Test): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 900, height: 760 } })
    t.teardown(async () => { await context.close() })
    const page = await context.newPage()
    page.setDefaultTimeout(20_000)
    return page
  }

  async function signIn (page: Page, username: string): Promise<void> {
    await page.getByLabel('Username').fill(username)
    await page.getByLabel('Password').fill(PASSWORD)
    // The POST's 303 makes no document of its own: the next load is the page it leads to.
    await Promise.all([page.waitForEvent('load'), page.getByRole('button', { name: 'Sign in', exact: true }).click()])
  }

  const authenticate = async (token: string): Promise<Record<string, unknown>> =>
    (await app.inject({ method: 'POST', url: '/auth/Authenticate', payload: { token } })).json<Record<string, unknown>>()

  await t.test('a person with a second factor signs in at Apache through the service, and a sign-out ends the token Apache holds', async (t) => {
    const page = await newPage(t)
    const wanted = `${apache.origin}/protected/reports?year=2026`
    await page.goto(wanted)
    t.match(page.url(), `${serviceOrigin}/auth/signin?rd=`, 'Apache sent the browser to the provider, and the provider to the service\'s sign-in page')
    t.equal(await page.title(), 'Sign in')
    await page.screenshot({ path: `${SCREENS}/oidc-apache-signin.png`, fullPage: true })

    await signIn(page, 'alice')
    t.equal(await page.title(), 'Enter your code', 'the account has a second factor: the code step')
    t.equal(await page.getByLabel('Code').getAttribute('autocomplete'), 'one-time-code')
    await page.screenshot({ path: `${SCREENS}/oidc-apache-code.png`, fullPage: true })
    await page.getByLabel('Code').fill(totpAt(secret, Date.now()))
    // The service's page on the way (the continue page: src/oidc/pages.ts), the provider, Apache's redirect URI, the page asked for.
    await Promise.all([page.waitForURL(wanted), page.getByRole('button', { name: 'Verify' }).click()])

    t.equal(page.url(), wanted, 'back at Apache, at the URL asked for')
    t.equal(await page.locator('#user').innerText(), 'alice', 'the page behind Apache shows the person\'s username')
    t.equal(await page.locator('#groups').innerText(), 'ops,staff', 'and their groups')
    t.equal(await page.locator('#path').innerText(), '/protected/reports?year=2026')
    t.equal(await page.locator('#amr').innerText(), 'pwd,otp', 'signed in with a password and a code')
    const alice = await app.backends.users.findByUsername('alice')
    t.equal(await page.locator('#sub').innerText(), alice?.id, 'sub is the account id')
    await page.screenshot({ path: `${SCREENS}/oidc-apache-signed-in.png`, fullPage: true })

    // The claims' headers are the module's alone: a browser's own of those names are taken out.
    await page.setExtraHTTPHeaders({ OIDC_CLAIM_groups: 'admins', 'OIDC-CLAIM-preferred-username': 'mallory', OIDC_access_token: 'forged' })
    await page.goto(`${apache.origin}/protected/forged`)
    t.equal(await page.locator('#groups').innerText(), 'ops,staff', 'a groups header the browser sent does not reach the app')
    t.equal(await page.locator('#user').innerText(), 'alice')
    const forged = upstream.seen.at(-1) ?? {}
    t.same([forged.oidc_access_token === 'forged', forged['oidc-claim-preferred-username']], [false, undefined], 'nor its token or username headers')
    await page.setExtraHTTPHeaders({})
    t.match(await readFile(join(apache.dir, 'error.log'), 'utf8'), 'scrubbed suspicious request header (OIDC_CLAIM_groups: admins)', 'the module took them out (and logged it)')

    const ops = await page.goto(`${apache.origin}/ops/dashboard`)
    t.equal(ops?.status(), 200, 'alice is in ops: the ops location lets her in')
    t.equal(await page.locator('#user').innerText(), 'alice')

    const held = upstream.seen.at(-1)?.oidc_access_token
    if (typeof held !== 'string') throw new Error('mod_auth_openidc passed no OIDC_access_token')
    t.match(await authenticate(held), { status: 0, kind: 'oidc', username: 'alice', groups: ['ops', 'staff'] }, 'the access token Apache holds is a token of the service')

    // Sign out at the service, from its signed-in page.
    await page.goto(`${serviceOrigin}/auth/signin`)
    t.equal(await page.locator('#signed-in-user').innerText(), 'alice', 'the service\'s page: alice is signed in')
    await Promise.all([page.waitForURL(`${serviceOrigin}/auth/signin`), page.getByRole('button', { name: 'Sign out', exact: true }).click()])
    const signedOut = Date.now()
    let answer = await authenticate(held)
    while (answer.status === 0 && Date.now() - signedOut < 1000) answer = await authenticate(held)
    const took = Date.now() - signedOut
    t.match(answer, { status: 403 }, `Authenticate refuses the access token Apache holds (${took} ms after the sign-out)`)
    t.ok(took < 1000, 'within a second')

    // Apache's own session ends too: the service posts a logout token to the module's back-channel
    // endpoint (sent from the revocation feed, off the sign-out's path), and the module drops the
    // session, so the page asked for again sends the browser to sign in, not on to the app.
    const before = upstream.seen.length
    let again = ''
    while (Date.now() - signedOut < 15_000) {
      await page.goto(wanted)
      again = page.url()
      if (again.startsWith(`${serviceOrigin}/auth/signin?rd=`)) break
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    t.match(again, `${serviceOrigin}/auth/signin?rd=`,
      `Apache's session ended with the sign-out (back-channel logout; ${Date.now() - signedOut} ms after it, ${upstream.seen.length - before} page(s) served before): sent to sign in again`)
  })

  await t.test('a person outside ops signs in, and is refused at the ops location', async (t) => {
    const page = await newPage(t)
    await page.goto(`${apache.origin}/ops/dashboard`)
    t.match(page.url(), `${serviceOrigin}/auth/signin?rd=`, 'sent to the sign-in page')
    const refused = page.waitForResponse((response) => response.url() === `${apache.origin}/ops/dashboard`)
    await signIn(page, 'bob')
    t.equal((await refused).status(), 403, 'signed in, but not in ops: Apache answers 403')
    await page.waitForURL(`${apache.origin}/ops/dashboard`)
    t.match(await page.locator('body').innerText(), /Forbidden/, 'Apache\'s own refusal')
    t.notOk(upstream.seen.some((headers) => headers.oidc_claim_preferred_username === 'bob'), 'nothing of bob\'s reached the app')
    await page.screenshot({ path: `${SCREENS}/oidc-apache-refused.png`, fullPage: true })
    await page.goto(`${apache.origin}/protected/`)
    t.equal(await page.locator('#user').innerText(), 'bob', 'the location any signed-in person may see lets bob in, with no second sign-in')
    t.equal(await page.locator('#groups').innerText(), 'staff')
  })
}
