import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import t, { type Test } from 'tap'
import { buildTestApp } from '../../support/app.js'
import { startCaddy, startEchoUpstream, startNginx } from '../../support/gateways.js'
import * as OTPAuth from 'otpauth'

/*
 * The browser sign-in as a person meets it: headless Chromium (Debian's) in front of
 * real nginx and real Caddy running the files shipped in deploy/, an upstream that echoes what
 * it was sent. For each gateway: a navigation without a cookie lands on the sign-in page, and
 * signing in returns to the URL asked for (path and query) with the upstream seeing alice; a
 * wrong password shows the page with a message and sets no cookie; every open-redirect variant
 * stays on an allowed origin; sign-out ends the token and the next navigation asks again; a
 * passkey registered and used through Chromium's virtual authenticator (CDP WebAuthn); the
 * password path with JavaScript off. The gateways are reached as `localhost`: WebAuthn takes no
 * IP address as its RP id. Screenshots go to SCREENS_DIR (default /tmp/ats-screens).
 */

const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync']
const PASSWORD = 'correct horse battery staple'
const SCREENS = process.env.SCREENS_DIR ?? '/tmp/ats-screens'

interface Echo { url: string, headers: Record<string, string | undefined> }

if (!existsSync(CHROMIUM)) {
  t.fail(`no Chromium at ${CHROMIUM}: install Debian's (apt-get install chromium; bash .ci/run does it when missing)`)
} else {
  await run(t)
}

async function run (t: Test): Promise<void> {
  await mkdir(SCREENS, { recursive: true })
  // The gateways are the trusted proxies: their Host and X-Forwarded-* name the origin the browser used.
  const testApp = await buildTestApp(t, 'real', { trustProxy: ['127.0.0.1'], cookieSecure: false, redirectAllowed: ['.allowed.test'] })
  const { app } = testApp
  await testApp.addUser('alice', PASSWORD)
  const serviceOrigin = await app.listen({ port: 0, host: '127.0.0.1' })
  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true, timeout: 60_000 })
  t.teardown(async () => { await browser.close() })

  const nginxUpstream = await startEchoUpstream(t)
  const nginx = await startNginx(t, serviceOrigin, nginxUpstream)
  const caddyUpstream = await startEchoUpstream(t)
  const caddy = await startCaddy(t, serviceOrigin, caddyUpstream, { siteHost: 'localhost' })
  const gateways: Array<[string, string]> = [
    ['nginx', nginx.origin.replace('127.0.0.1', 'localhost')],
    ['caddy', caddy.origin]
  ]

  async function newPage (t: Test, options: { javaScriptEnabled?: boolean } = {}): Promise<{ context: BrowserContext, page: Page }> {
    const context = await browser.newContext({ javaScriptEnabled: options.javaScriptEnabled ?? true, viewport: { width: 900, height: 820 } })
    t.teardown(async () => { await context.close() })
    const page = await context.newPage()
    page.setDefaultTimeout(20_000)
    return { context, page }
  }

  async function tokenCookie (context: BrowserContext, origin: string): Promise<string | undefined> {
    return (await context.cookies(origin)).find((cookie) => cookie.name === 'AuthToken1')?.value
  }

  async function echoed (page: Page): Promise<Echo> {
    return JSON.parse(await page.locator('body').innerText()) as Echo
  }

  async function signInWithPassword (page: Page, password = PASSWORD, username = 'alice'): Promise<void> {
    await page.getByLabel('Username').fill(username)
    await page.getByLabel('Password').fill(password)
    // The POST's 303 makes no document of its own: the next load is the page it leads to.
    await Promise.all([page.waitForEvent('load'), page.getByRole('button', { name: 'Sign in', exact: true }).click()])
  }

  for (const [name, origin] of gateways) {
    t.test(`${name}: a navigation asks to sign in, and signing in returns to the URL asked for`, async (t) => {
      const { context, page } = await newPage(t)
      const wanted = `${origin}/orders/7?page=2&sort=asc&q=a%20b`
      const first = await page.goto(wanted)
      t.match(page.url(), `${origin}/auth/signin?rd=`, 'sent to the sign-in page on the same host')
      t.equal(first?.status(), 200)
      t.equal(await page.title(), 'Sign in')
      if (name === 'nginx') await page.screenshot({ path: `${SCREENS}/signin.png`, fullPage: true })
      const api = await fetch(`${origin}/orders/7`, { redirect: 'manual', headers: { accept: 'application/json' } })
      t.equal(api.status, 401, 'an API call (not a navigation) still gets 401')
      const bearer = await fetch(`${origin}/orders/7`, { redirect: 'manual', headers: { accept: 'text/html', 'sec-fetch-mode': 'navigate', authorization: 'Bearer nope' } })
      t.equal(bearer.status, 401, 'a navigation with an Authorization header: 401 too')
      await signInWithPassword(page)
      t.equal(page.url(), wanted, 'back at the URL asked for, path and query as they were')
      const echo = await echoed(page)
      t.equal(echo.url, '/orders/7?page=2&sort=asc&q=a%20b', 'the upstream got the original path and query')
      t.equal(echo.headers['x-auth-user'], 'alice', 'the upstream sees alice')
      t.ok(await tokenCookie(context, origin), 'the cookie is the app host\'s')
      await page.goto(`${origin}/auth/signin`)
      t.equal(await page.locator('#signed-in-user').innerText(), 'alice', 'the signed-in page says who')
      t.ok(await page.locator('#sessions li').count() >= 1, 'and lists the sessions')
      t.equal(await page.locator('#sessions li .badge').count(), 1, 'this browser\'s marked')
    })

    t.test(`${name}: a wrong password shows the page again with a message and sets no cookie`, async (t) => {
      const { context, page } = await newPage(t)
      await page.goto(`${origin}/private`)
      await signInWithPassword(page, 'not the password')
      t.match(page.url(), `${origin}/auth/signin`, 'still on the sign-in page')
      t.equal(await page.getByRole('alert').innerText(), 'The username or password is not right.')
      if (name === 'nginx') await page.screenshot({ path: `${SCREENS}/signin-wrong-password.png`, fullPage: true })
      t.equal(await page.getByLabel('Username').inputValue(), 'alice', 'the username kept')
      t.equal(await tokenCookie(context, origin), undefined, 'no cookie')
      await signInWithPassword(page)
      t.equal(new URL(page.url()).pathname, '/private', 'the rd survived the failure: the next try goes back')
    })

    t.test(`${name}: every open-redirect variant stays on an allowed origin`, async (t) => {
      const host = new URL(origin).host
      const variants = [
        '//evil.test/', '///evil.test/', '/\\evil.test/', '\\\\evil.test/', 'https:evil.test', 'http:/evil.test',
        `http://${host}@evil.test/`, 'http://evil.test#@' + host, 'http://evil.test?@' + host, '%2f%2fevil.test',
        '/%2f%2fevil.test', 'javascript:alert(1)', 'data:text/html,<p>evil</p>', 'http://evil.test\t/', 'http://evil.allowed.test.evil.test/',
        'http://evilallowed.test/', 'https://evil。test/', 'http://ｅｖｉｌ.test/', '\thttp://evil.test/'
      ]
      const { context, page } = await newPage(t)
      for (const variant of variants) {
        await context.clearCookies()
        await page.goto(`${origin}/auth/signin?rd=${encodeURIComponent(variant)}`)
        await signInWithPassword(page)
        const landed = new URL(page.url())
        t.equal(landed.origin, origin, `${JSON.stringify(variant)}: still on ${origin} (${page.url()})`)
      }
      // An allowed host is followed: the service says where (the browser cannot resolve it here).
      await context.clearCookies()
      await page.goto(`${origin}/auth/signin?rd=${encodeURIComponent('http://app.allowed.test/x')}`)
      const response = page.waitForResponse((answer) => answer.request().method() === 'POST')
      await page.getByLabel('Username').fill('alice')
      await page.getByLabel('Password').fill(PASSWORD)
      await page.getByRole('button', { name: 'Sign in', exact: true }).click().catch(() => {})
      t.equal((await response).headers().location, 'http://app.allowed.test/x', 'an AUTH_REDIRECT_ALLOWED host is followed')
    })

    t.test(`${name}: sign-out ends the token, and the next navigation asks to sign in again`, async (t) => {
      const { context, page } = await newPage(t)
      await page.goto(`${origin}/account`)
      await signInWithPassword(page)
      const token = await tokenCookie(context, origin)
      t.ok(token, 'signed in')
      await page.goto(`${origin}/auth/signin`)
      await Promise.all([page.waitForURL(`${origin}/auth/signin`), page.getByRole('button', { name: 'Sign out', exact: true }).click()])
      t.equal(await page.title(), 'Sign in', 'the sign-in page after signing out')
      t.equal(await tokenCookie(context, origin), undefined, 'the cookie cleared')
      const check = await app.inject({ url: '/auth/Authenticate', headers: { authorization: `Bearer ${token ?? ''}` } })
      t.equal(check.statusCode, 403, 'the token ended')
      await page.goto(`${origin}/account?again=1`)
      t.match(page.url(), `${origin}/auth/signin?rd=`, 'the next navigation asks to sign in again')
    })

    t.test(`${name}: the password path without JavaScript`, async (t) => {
      const { context, page } = await newPage(t, { javaScriptEnabled: false })
      await page.goto(`${origin}/reports?year=2026`)
      t.match(page.url(), `${origin}/auth/signin?rd=`)
      t.notOk(await page.locator('#passkey-button').isVisible(), 'no passkey button without JavaScript')
      await signInWithPassword(page)
      t.equal(page.url(), `${origin}/reports?year=2026`)
      t.equal((await echoed(page)).headers['x-auth-user'], 'alice')
      t.ok(await tokenCookie(context, origin))
    })

    t.test(`${name}: a passkey registered on the signed-in page signs in through the virtual authenticator`, async (t) => {
      const { context, page } = await newPage(t)
      const cdp = await context.newCDPSession(page)
      await cdp.send('WebAuthn.enable')
      const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
        options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true }
      })
      // An account of its own: the signed-in page lists this browser's session alone.
      const username = `passkey-${name}`
      await testApp.addUser(username, PASSWORD)
      await page.goto(`${origin}/auth/signin`)
      await signInWithPassword(page, PASSWORD, username)
      await page.getByLabel('Your password, to add a passkey').fill(PASSWORD)
      await page.getByRole('button', { name: 'Add a passkey' }).click()
      await page.locator('#passkeys li').first().waitFor()
      t.equal(await page.locator('#passkeys li').count(), 1, 'the passkey is listed')
      const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId })
      t.equal(credentials.length, 1, 'the authenticator holds one credential')
      t.equal(credentials[0]?.isResidentCredential, true, 'discoverable')
      if (name === 'nginx') await page.screenshot({ path: `${SCREENS}/signed-in.png`, fullPage: true })

      // A second factor too: the password now asks for a code, a passkey does not.
      const token = await tokenCookie(context, origin) ?? ''
      const begun = (await app.inject({ method: 'POST', url: '/auth/totp', headers: { authorization: `Bearer ${token}` }, payload: { current_password: PASSWORD } })).json<{ otpauth_uri: string }>()
      const generator = OTPAuth.URI.parse(begun.otpauth_uri) as OTPAuth.TOTP
      const confirmed = await app.inject({ method: 'POST', url: '/auth/totp/confirm', headers: { authorization: `Bearer ${token}` }, payload: { code: generator.generate({ timestamp: Date.now() - 30_000 }) } })
      t.equal(confirmed.statusCode, 200, 'a TOTP second factor enrolled')

      await page.getByRole('button', { name: 'Sign out', exact: true }).click()
      await page.waitForURL(`${origin}/auth/signin`)
      t.equal(await tokenCookie(context, origin), undefined, 'signed out')
      const coded = `${origin}/reports?with=code`
      await page.goto(coded)
      await signInWithPassword(page, PASSWORD, username)
      t.equal(await page.title(), 'Enter your code', 'the right password asks for the code')
      t.equal(await page.getByLabel('Code').getAttribute('autocomplete'), 'one-time-code')
      t.equal(await tokenCookie(context, origin), undefined, 'no token before the code')
      if (name === 'nginx') await page.screenshot({ path: `${SCREENS}/code-step.png`, fullPage: true })
      await page.getByLabel('Code').fill(generator.generate())
      await Promise.all([page.waitForEvent('load'), page.getByRole('button', { name: 'Verify' }).click()])
      t.equal(page.url(), coded, 'the code signs in and goes back')
      t.equal((await echoed(page)).headers['x-auth-user'], username)
      await page.goto(`${origin}/auth/signin`)
      await page.getByRole('button', { name: 'Sign out', exact: true }).click()
      await page.waitForURL(`${origin}/auth/signin`)

      const wanted = `${origin}/dashboard?tab=keys`
      await page.goto(wanted)
      await page.getByRole('button', { name: 'Sign in with a passkey' }).click()
      await page.waitForURL(wanted)
      t.equal((await echoed(page)).headers['x-auth-user'], username, 'the passkey signed its owner in, back where they were going, with no code step: it is the second factor')
      await app.backends.audit.flush()
      const events = await app.backends.audit.list({ username, event: 'login.success' })
      t.ok(events.some((event) => event.outcome === 'issued-by-passkey'), 'audited as a Login by passkey')

      await page.goto(`${origin}/auth/signin`)
      await page.getByRole('button', { name: /^Remove passkey/ }).click()
      await page.locator('#no-passkeys').waitFor()
      t.pass('the passkey can be removed')
      await page.getByRole('button', { name: 'Sign out', exact: true }).click()
      await page.waitForURL(`${origin}/auth/signin`)
      await page.getByRole('button', { name: 'Sign in with a passkey' }).click()
      await page.getByRole('alert').waitFor()
      t.equal(await page.getByRole('alert').innerText(), 'That passkey did not sign you in.', 'a removed passkey signs nobody in')
      t.equal(await tokenCookie(context, origin), undefined, 'no cookie')
    })
  }
}
