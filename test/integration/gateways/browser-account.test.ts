import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { chromium, type Browser, type Page } from 'playwright-core'
import t, { type Test } from 'tap'
import { base32Decode, totpAt } from '../../../src/totp/rfc6238.js'
import { buildTestApp } from '../../support/app.js'

/*
 * The account page as a person uses it, in headless Chromium (Debian's), with JavaScript on and
 * off: sign in, end another session, create an API key and see its secret once, set up two-step
 * verification (the code computed from the key the page shows, by the project's own RFC 6238
 * module), turn it off, change the password. Every step is a click on the page's own forms.
 * Screenshots go to SCREENS_DIR (default /tmp/ats-screens); docs/images/ holds the ones the docs show.
 */

const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync']
const PASSWORD = 'correct horse battery staple'
const NEW_PASSWORD = 'a different long passphrase 2'
const SCREENS = process.env.SCREENS_DIR ?? '/tmp/ats-screens'
const STEP_MS = 30_000

if (!existsSync(CHROMIUM)) {
  t.fail(`no Chromium at ${CHROMIUM}: install Debian's (apt-get install chromium; bash .ci/run does it when missing)`)
} else {
  await run(t)
}

/** Not within 3 s of a step's end: the codes made now stay in the steps they were made for. */
async function awayFromStepEnd (): Promise<void> {
  const into = Date.now() % STEP_MS
  if (into > STEP_MS - 3000) await new Promise((resolve) => setTimeout(resolve, STEP_MS - into + 100))
}

async function run (t: Test): Promise<void> {
  await mkdir(SCREENS, { recursive: true })
  const { app } = await buildTestApp(t, 'embedded', { cookieSecure: false, signinTitle: 'Example Corp' })
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  const origin = address.replace('127.0.0.1', 'localhost')
  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true, timeout: 60_000 })
  t.teardown(async () => { await browser.close() })

  const active = async (token: string): Promise<boolean> =>
    (await app.inject({ url: '/auth/Authenticate', headers: { authorization: `Bearer ${token}` } })).statusCode === 200

  /** A click that posts a form: the next load is the page it leads to (a 303's target, or the answer). */
  async function submit (page: Page, button: string | RegExp): Promise<void> {
    await Promise.all([page.waitForEvent('load'), page.getByRole('button', typeof button === 'string' ? { name: button, exact: true } : { name: button }).click()])
  }

  async function walk (t: Test, javaScriptEnabled: boolean): Promise<void> {
    const username = javaScriptEnabled ? 'alice' : 'bob'
    const shot = async (page: Page, name: string): Promise<void> => {
      await page.screenshot({ path: `${SCREENS}/account-${javaScriptEnabled ? 'js' : 'nojs'}-${name}.png`, fullPage: true })
    }
    await app.accounts.add(username, PASSWORD, false)
    // Another device's session, for the page to end.
    const phone = (await app.inject({
      method: 'POST',
      url: '/auth/Login',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) Version/18.0 Mobile/15E148 Safari/604.1' },
      payload: new URLSearchParams({ username, password: PASSWORD }).toString()
    })).json<{ token: string }>().token
    const context = await browser.newContext({ javaScriptEnabled, viewport: { width: 900, height: 900 } })
    t.teardown(async () => { await context.close() })
    const page = await context.newPage()
    page.setDefaultTimeout(20_000)

    await page.goto(`${origin}/auth/signin`)
    t.equal(await page.locator('#brand').innerText(), 'Example Corp', 'the sign-in page names whose it is')
    if (javaScriptEnabled) await shot(page, 'signin')
    await page.getByLabel('Username').fill(username)
    await page.getByLabel('Password').fill(PASSWORD)
    await submit(page, 'Sign in')
    t.equal(await page.title(), 'Your account', 'signed in: the account page')
    t.equal(await page.locator('#sessions li').count(), 2, 'two sessions: this browser and the phone')
    await shot(page, 'overview')

    await submit(page, /^End the session of Safari 18 on iOS/)
    t.equal(await page.getByRole('status').innerText(), 'The session was ended.')
    t.notOk(await active(phone), 'the phone\'s token ended')
    t.equal(await page.locator('#sessions li').count(), 1, 'one session left')

    await page.getByLabel('Key name').fill('nightly backup')
    await page.getByLabel('Valid for (days)').fill('30')
    await page.getByLabel('Your password, to create a key').fill('not the password')
    await submit(page, 'Create API key')
    t.equal(await page.getByRole('alert').innerText(), 'That password is not right.', 'a wrong password: the page with a message')
    t.equal(await page.getByLabel('Key name').inputValue(), '', 'no key page')
    await page.getByLabel('Key name').fill('nightly backup')
    await page.getByLabel('Valid for (days)').fill('30')
    await page.getByLabel('Your password, to create a key').fill(PASSWORD)
    await submit(page, 'Create API key')
    t.equal(await page.title(), 'Your new API key')
    const secret = await page.getByLabel('Key').inputValue()
    t.match(secret, /^atsk_[A-Za-z0-9_-]{43,}$/, 'the secret, once')
    t.match(await page.getByRole('status').innerText(), 'will not be shown again')
    t.ok(await app.auth.authenticateCredential(secret), 'the key works')
    await shot(page, 'new-key')
    await Promise.all([page.waitForEvent('load'), page.getByRole('link', { name: 'Back to your account' }).click()])
    t.notMatch(await page.content(), secret, 'the account page does not show it again')
    t.equal(await page.locator('#keys li').count(), 1, 'the key listed')

    await awayFromStepEnd()
    await page.getByLabel('Your password, to set it up').fill(PASSWORD)
    await submit(page, 'Set up two-step verification')
    t.equal(await page.title(), 'Set up two-step verification')
    t.ok(await page.getByRole('img', { name: /QR code/ }).isVisible(), 'a QR code')
    t.equal(await page.locator('#recovery-codes li').count(), 10, 'ten recovery codes')
    await shot(page, 'totp-setup')
    const key = base32Decode((await page.locator('#totp-secret').innerText()).replace(/\s/g, '')) ?? Buffer.alloc(0)
    t.equal(key.length, 20, 'the key as text, 160 bits')
    await page.getByLabel('Enter the 6-digit code the app shows').fill(totpAt(key, Date.now() - STEP_MS))
    await submit(page, 'Turn on')
    t.equal(await page.getByRole('status').innerText(), 'Two-step verification is on.')
    t.equal(await page.locator('#totp-state .badge').innerText(), 'On')
    await shot(page, 'totp-on')

    await page.getByLabel('Your password, to turn it off').fill(PASSWORD)
    await page.getByLabel('A code from your app, or a recovery code').fill(totpAt(key, Date.now()))
    await submit(page, 'Turn off two-step verification')
    t.equal(await page.getByRole('status').innerText(), 'Two-step verification is off.')

    await page.getByLabel('Current password').fill(PASSWORD)
    await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD)
    await page.getByLabel('New password again').fill(NEW_PASSWORD)
    await submit(page, 'Change password')
    t.equal(await page.getByRole('status').innerText(), 'Your password was changed. Your other sessions were signed out.')
    await shot(page, 'password-changed')
    const login = await app.inject({ method: 'POST', url: '/auth/Login', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams({ username, password: NEW_PASSWORD }).toString() })
    t.equal(login.statusCode, 200, 'the new password signs in')
    t.equal(await page.title(), 'Your account', 'this browser stays signed in')

    // Keyboard only: Tab reaches the section links and the forms' fields in order.
    await page.goto(`${origin}/auth/signin`)
    await page.keyboard.press('Tab')
    t.equal(await page.locator(':focus').innerText(), 'Sessions', 'the first Tab stop: the Sessions link')
  }

  t.test('with JavaScript', async (t) => { await walk(t, true) })
  t.test('without JavaScript', async (t) => { await walk(t, false) })
}
