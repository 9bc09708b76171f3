import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout } from 'node:timers/promises'
import { join } from 'node:path'
import { chromium, type BrowserContext } from 'playwright-core'
import t, { type Test } from 'tap'
import * as oidc from 'openid-client'
import { tempDir } from '../../../support/processes.js'
import { PASSWORD, pkceRequest, setUp } from '../../oidc/support.js'

/*
 * The OpenID provider's pages in a real browser (Debian's headless Chromium): a redirect_uri the
 * client never registered shows the service's error page — styled by the sign-in pages' own
 * stylesheet under their strict CSP, nothing refused by it, no request to the address named — and
 * prompt=login shows the sign-in form to a browser that is signed in, whose sign-in then goes
 * back to the client with a code. Screenshots go to SCREENS_DIR (default /tmp/ats-screens).
 */

const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync']
const SCREENS = process.env.SCREENS_DIR ?? '/tmp/ats-screens'
const ELSEWHERE = 'https://attacker.example/callback'

if (!existsSync(CHROMIUM)) {
  t.fail(`no Chromium at ${CHROMIUM}: install Debian's (apt-get install chromium; bash .ci/run does it when missing)`)
} else {
  await run(t)
}

/** The client's callback: a page of its own origin (Chromium refuses the tests' usual port 9). */
async function clientCallback (t: Test): Promise<string> {
  const server = createServer((_request, response) => { response.writeHead(200, { 'content-type': 'text/plain' }).end('the client') })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => { await new Promise((resolve) => server.close(resolve)) })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`
}

async function run (t: Test): Promise<void> {
  const callback = await clientCallback(t)
  const flow = await setUp(t, 'embedded', { redirectUris: [callback] })
  const context: BrowserContext = await chromium.launchPersistentContext(await tempDir(t, 'ats-oidc-chromium-'), {
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
    headless: true,
    viewport: { width: 900, height: 760 },
    timeout: 60_000
  })
  t.teardown(async () => { await context.close() })
  await mkdir(SCREENS, { recursive: true })
  const page = context.pages()[0] ?? await context.newPage()
  page.setDefaultTimeout(30_000)
  const complaints: string[] = []
  page.on('console', (message) => { if (message.type() === 'error' || message.type() === 'warning') complaints.push(message.text()) })
  page.on('pageerror', (error) => { complaints.push(error.message) })
  const requested: string[] = []
  page.on('request', (request) => { requested.push(request.url()) })

  await t.test('a redirect_uri not registered: the service\'s error page, styled, under its CSP, and no way to the address', async (t) => {
    const { url } = await pkceRequest(flow.config, { redirect_uri: ELSEWHERE })
    const response = await page.goto(url.href)
    t.equal(response?.status(), 400)
    t.equal(page.url(), url.href, 'the browser stayed on the provider\'s address')
    t.equal(await page.locator('h1').textContent(), 'Sign-in stopped')
    t.match(await page.locator('#notice').textContent(), /has not registered with this service, so you were not sent there/)
    t.match(await page.locator('#detail').textContent(), /^invalid_redirect_uri: /)
    // The stylesheet applied (the card's rounded corners are its, not a browser default).
    t.equal(await page.evaluate('getComputedStyle(document.querySelector("main")).borderRadius'), '14px', 'the sign-in pages\' style applied')
    t.notOk(await page.content().then((html) => html.includes('attacker.example')), 'the address is not on the page')
    t.same(requested.filter((address) => new URL(address).hostname === 'attacker.example'), [], 'nothing was asked of the address')
    // The one complaint a 400 page brings is its own status.
    t.same(complaints.filter((text) => !/status of 400/.test(text)), [], 'nothing refused by the CSP, no script error')
    await page.screenshot({ path: join(SCREENS, 'oidc-error-redirect-uri.png'), fullPage: true })
  })

  await t.test('prompt=login: the form again to a signed-in browser; signing in goes back with a code', async (t) => {
    complaints.length = 0
    const first = await pkceRequest(flow.config, { redirect_uri: callback })
    await page.goto(first.url.href)
    await page.fill('#username', 'alice')
    await page.fill('#password', PASSWORD)
    await Promise.all([page.waitForURL(`${callback}**`), page.click('button[type=submit]')])
    t.ok(new URL(page.url()).searchParams.get('code'), 'signed in: back with a code')

    // auth_time is in seconds: a sign-in in the second the request began would count as made for it.
    await setTimeout(1100)
    const again = await pkceRequest(flow.config, { redirect_uri: callback, prompt: 'login' })
    await page.goto(again.url.href)
    t.equal(new URL(page.url()).pathname, '/auth/signin', 'the sign-in page, though signed in')
    t.equal(await page.locator('.lead').textContent(), 'The application asks you to sign in again.')
    t.equal(await page.locator('#username').inputValue(), 'alice', 'who is signed in, filled in')
    await page.screenshot({ path: join(SCREENS, 'oidc-prompt-login.png'), fullPage: true })
    await page.fill('#password', PASSWORD)
    await Promise.all([page.waitForURL(`${callback}**`), page.click('button[type=submit]')])
    const back = new URL(page.url())
    const tokens = await oidc.authorizationCodeGrant(flow.config, back, { pkceCodeVerifier: again.verifier, expectedState: again.state })
    t.type(tokens.claims()?.auth_time, 'number', 'a code, and tokens for it')
    t.same(complaints, [], 'nothing refused by the CSP, no script error')
  })
}
