import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { chromium, type Page } from 'playwright-core'
import * as oidc from 'openid-client'
import t, { type Test } from 'tap'
import { discover, PASSWORD, startProvider } from '../../oidc/relying-party.js'

/*
 * The provider's own pages in a real browser (Debian's headless Chromium) with JavaScript off:
 * the device flow's (enter the code, a wrong one, check and allow, signed in on the way, done) and
 * RP-initiated logout's (confirm, back at the client; asked again with no one signed in). Every form
 * works without a script, and the strict Content-Security-Policy is never violated (the browser
 * reports each violation on the console). Screenshots go to SCREENS_DIR (default /tmp/ats-screens).
 */

const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync']
const SCREENS = process.env.SCREENS_DIR ?? '/tmp/ats-screens'

if (!existsSync(CHROMIUM)) {
  t.fail(`no Chromium at ${CHROMIUM}: install Debian's (apt-get install chromium; bash .ci/run does it when missing)`)
} else {
  await run(t)
}

/** The relying party's own pages: where the provider sends the browser back to. */
async function relyingParty (t: Test): Promise<string> {
  const server = createServer((request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><title>app</title><p id="where">${new URL(request.url ?? '/', 'http://x').pathname}</p>`)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

async function run (t: Test): Promise<void> {
  await mkdir(SCREENS, { recursive: true })
  const provider = await startProvider(t, 'embedded')
  const { app } = provider
  const rp = await relyingParty(t)
  const cli = await app.oidcClients.create({ name: 'deploy-cli', redirectUris: [`${rp}/callback`], public: true }, { userAgent: 'test' })
  const web = await app.oidcClients.create({ name: 'Grafana', redirectUris: [`${rp}/callback`], postLogoutRedirectUris: [`${rp}/signed-out`] }, { userAgent: 'test' })
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true, timeout: 60_000 })
  t.teardown(async () => { await browser.close() })
  const context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 900, height: 760 } })
  const page: Page = await context.newPage()
  page.setDefaultTimeout(30_000)
  const violations: string[] = []
  page.on('console', (message) => { if (/Content.Security.Policy|Refused to/i.test(message.text())) violations.push(message.text()) })
  const shot = async (name: string): Promise<void> => { await page.screenshot({ path: `${SCREENS}/oidc-${name}.png`, fullPage: true }) }

  await t.test('the device flow, JavaScript off', async (t) => {
    const config = await discover(provider, cli.client.clientId, undefined)
    const device = await oidc.initiateDeviceAuthorization(config, { scope: 'openid' })
    const polled = oidc.pollDeviceAuthorizationGrant(config, { ...device, interval: 1 })
    await page.goto(device.verification_uri)
    t.equal(await page.title(), 'Connect a device')
    await shot('device-entry')
    await page.getByLabel('Code').fill('BCDF-GHJK')
    await page.getByRole('button', { name: 'Continue' }).click()
    t.equal(await page.getByRole('alert').innerText(), 'That code is not right. Check it and try again.')
    await shot('device-wrong-code')
    await page.getByLabel('Code').fill(device.user_code.toLowerCase())
    await page.getByRole('button', { name: 'Continue' }).click()
    t.equal(await page.locator('#user-code').innerText(), device.user_code, 'the code to compare with the device')
    await shot('device-confirm')
    await page.getByRole('button', { name: 'Sign in and allow' }).click()
    t.equal(await page.title(), 'Sign in', 'the service\'s sign-in page on the way')
    await page.getByLabel('Username').fill('alice')
    await page.getByLabel('Password').fill(PASSWORD)
    await page.getByRole('button', { name: 'Sign in', exact: true }).click()
    // Through the service's continue page (a refresh, no script) to the provider, which shows the end.
    await page.getByRole('heading', { name: 'Device connected' }).waitFor()
    t.equal(await page.title(), 'Device connected')
    await shot('device-done')
    const tokens = await polled
    t.ok(tokens.access_token, 'the device has its tokens')
  })

  await t.test('RP-initiated logout, JavaScript off', async (t) => {
    const config = await discover(provider, web.client.clientId, web.secret)
    const verifier = oidc.randomPKCECodeVerifier()
    await page.goto(oidc.buildAuthorizationUrl(config, { redirect_uri: `${rp}/callback`, scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' }).href)
    t.match(page.url(), `${rp}/callback?code=`, 'single sign-on: straight back with a code')
    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: verifier })
    await page.goto(oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token ?? '', post_logout_redirect_uri: `${rp}/signed-out` }).href)
    t.equal(await page.title(), 'Sign out')
    await shot('logout-confirm')
    await page.getByRole('button', { name: 'Sign out' }).click()
    t.equal(page.url(), `${rp}/signed-out`, 'back at the client after the form\'s redirect (form-action allows its origin)')
    t.same((await context.cookies(provider.base)).filter((cookie) => cookie.name === 'AuthToken1'), [], 'signed out of the service')
    await page.goto(oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token ?? '', post_logout_redirect_uri: `${rp}/signed-out` }).href)
    await shot('logout-nobody')
    await page.getByRole('button', { name: 'Continue' }).click()
    t.equal(page.url(), `${rp}/signed-out`)
    await page.goto(`${provider.issuer}/session/end`)
    await page.getByRole('button', { name: 'Continue' }).click()
    t.equal(await page.title(), 'Signed out')
    await shot('logout-done')
  })

  t.same(violations, [], 'no Content-Security-Policy violation on any page')
}
