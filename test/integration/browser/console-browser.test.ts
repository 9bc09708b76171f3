import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import t, { type Test } from 'tap'
import { startService, type ServiceProcess } from '../../../support/service.js'
import { freePort, tempDir } from '../../../support/processes.js'
import { seedMigratedDataDir } from '../../support/pglite-template.js'

/*
 * The admin console as a person uses it, in Debian's headless Chromium against the built
 * service: sign in as an admin through the sign-in page, find a person, end their session, and
 * see their token refused at once by Authenticate; the same with JavaScript off; a keyboard-only
 * pass (labels, focus order); a form of another site refused. Screenshots of the pages go to
 * ATS_CONSOLE_SCREENSHOTS (docs/images for the README's), or /tmp/ats-screens.
 */

const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync']
const SCREENS = process.env.ATS_CONSOLE_SCREENSHOTS ?? '/tmp/ats-screens'
/** Pages looked at but not kept in the docs. */
const EXTRA_SCREENS = '/tmp/ats-screens'
const ROOT_PASSWORD = `console admin ${randomBytes(6).toString('hex')}`
const PERSON_PASSWORD = `a person's passphrase ${randomBytes(6).toString('hex')}`
const ADMIN_KEY = randomBytes(32).toString('base64url')
const PHONE = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1'

/** In the page: the focused element, as `#id` or `tag:text`. (Page code as text: this file is compiled without the DOM's types.) */
const FOCUSED = `(() => {
  const active = document.activeElement
  if (active === null) return ''
  return active.id !== '' ? '#' + active.id : active.tagName.toLowerCase() + ':' + (active.textContent || '').trim()
})()`
/** In the page: the visible fields without a label (neither a <label> nor aria-label). */
const UNLABELLED = `[...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
  .filter((field) => !field.hasAttribute('hidden') && field.labels.length === 0 && !field.hasAttribute('aria-label'))
  .map((field) => field.outerHTML)`

if (!existsSync(CHROMIUM)) {
  t.fail(`no Chromium at ${CHROMIUM}: install Debian's (apt-get install chromium; bash .ci/run does it when missing)`)
} else {
  await run(t)
}

interface Setup {
  service: ServiceProcess
  admin: (method: string, path: string, body?: unknown) => Promise<Response>
}

async function setUp (t: Test): Promise<Setup> {
  const internalPort = await freePort()
  const service = await startService(t, {
    AUTH_DATA_DIR: await seedMigratedDataDir(await tempDir(t, 'ats-console-data-')),
    AUTH_BOOTSTRAP_USERNAME: 'root',
    AUTH_BOOTSTRAP_PASSWORD: ROOT_PASSWORD,
    AUTH_ADMIN_KEY: ADMIN_KEY,
    AUTH_SIGNIN_TITLE: 'Example Corp',
    INTERNAL_PORT: String(internalPort),
    LOG_LEVEL: 'warn'
  })
  const admin = async (method: string, path: string, body?: unknown): Promise<Response> => await fetch(`http://127.0.0.1:${internalPort}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  // root runs the console; a few people and a service, and a morning's Logins, for the pages to show.
  await admin('PUT', '/admin/users/root/groups', { groups: ['admins'] })
  for (const [username, groups] of [['alice', ['staff', 'wiki']], ['alex', ['staff']], ['bob', ['staff', 'ops']], ['carol', []]] as const) {
    await admin('POST', '/admin/users', { username, password: PERSON_PASSWORD })
    if (groups.length > 0) await admin('PUT', `/admin/users/${username}/groups`, { groups })
  }
  await admin('POST', '/admin/users', { username: 'ci-bot', kind: 'service' })
  await admin('POST', '/admin/users/ci-bot/keys', { name: 'deploy pipeline', expires_in_days: 90 })
  for (const username of ['bob', 'carol', 'alex']) await login(service, username, PERSON_PASSWORD)
  for (let i = 0; i < 3; i++) await login(service, 'carol', 'not her password').catch(() => '')
  return { service, admin }
}

/** A Login of a device other than the browser (alice's phone): its token. */
async function login (service: ServiceProcess, username: string, password: string, userAgent = PHONE): Promise<string> {
  const response = await fetch(`${service.baseUrl}/auth/Login`, { method: 'POST', headers: { 'user-agent': userAgent }, body: new URLSearchParams({ username, password }) })
  const body = await response.json() as { token?: string }
  if (body.token === undefined) throw new Error(`no token for ${username}`)
  return body.token
}

async function authenticateStatus (service: ServiceProcess, token: string): Promise<number> {
  const response = await fetch(`${service.baseUrl}/auth/Authenticate/${token}`)
  await response.arrayBuffer()
  return response.status
}

async function browser (t: Test, javaScriptEnabled: boolean): Promise<{ context: BrowserContext, page: Page, errors: string[] }> {
  const context = await chromium.launchPersistentContext(await tempDir(t, 'ats-console-chromium-'), {
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
    headless: true,
    javaScriptEnabled,
    viewport: { width: 1280, height: 860 },
    timeout: 60_000
  })
  t.teardown(async () => { await context.close() })
  const page = context.pages()[0] ?? await context.newPage()
  page.setDefaultTimeout(30_000)
  const errors: string[] = []
  // A CSP violation or a script error would show here.
  page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()) })
  page.on('pageerror', (error) => { errors.push(error.message) })
  return { context, page, errors }
}

/** Through the console's door: the sign-in page, and back to what was asked for. */
async function signIn (page: Page, service: ServiceProcess, path = '/console'): Promise<void> {
  await page.goto(`${service.baseUrl}${path}`)
  await page.waitForURL(/\/auth\/signin\?rd=/)
  await page.fill('#username', 'root')
  await page.fill('#password', ROOT_PASSWORD)
  await Promise.all([page.waitForURL(`${service.baseUrl}${path}`), page.click('button[type=submit].primary')])
}

/** Find alice, open her page, end her phone's session through its confirm page. */
async function endPhoneSession (t: Test, page: Page, service: ServiceProcess, shot?: (name: string) => Promise<void>): Promise<void> {
  await page.click('nav a[href="/console/accounts"]')
  await page.fill('#q', 'ali')
  await Promise.all([page.waitForURL(/\/console\/accounts\?q=ali/), page.click('#search-button')])
  t.same(await page.locator('#accounts tbody th a').allInnerTexts(), ['alice'], 'the accounts whose usernames start with "ali" (not alex)')
  await shot?.('accounts')
  await Promise.all([page.waitForURL(/\/console\/accounts\/alice$/), page.click('#accounts a:text-is("alice")')])
  t.equal(await page.locator('#fact-kind').innerText(), 'person')
  t.equal(await page.locator('#fact-groups').innerText(), 'staff, wiki')
  t.match(await page.locator('#sessions').innerText(), /Safari 17 on iOS/, 'her phone\'s session is listed')
  await shot?.('account')
  await Promise.all([page.waitForURL(/\/sessions\/[^/]+\/end$/), page.click('#sessions a.danger')])
  t.match(await page.locator('#confirm-question').innerText(), /End this session of alice\?/)
  await shot?.('confirm')
  await Promise.all([page.waitForURL(/\/console\/accounts\/alice\?done=session-ended$/), page.click('#confirm-button')])
  t.equal(await page.locator('#notice').innerText(), 'The session was ended.')
  t.equal(await page.locator('#no-sessions').count(), 1, 'no session left')
}

async function run (t: Test): Promise<void> {
  const { service } = await setUp(t)
  await mkdir(SCREENS, { recursive: true })
  await mkdir(EXTRA_SCREENS, { recursive: true })

  await t.test('an admin signs in, finds a person, ends her session: her token is refused at once', async (t) => {
    const phone = await login(service, 'alice', PERSON_PASSWORD)
    t.equal(await authenticateStatus(service, phone), 200)
    const { page, errors } = await browser(t, true)
    const shot = async (name: string): Promise<void> => { await page.screenshot({ path: join(SCREENS, `console-${name}.png`), fullPage: true }) }
    await signIn(page, service)
    t.equal(await page.locator('h1').innerText(), 'Dashboard')
    t.equal(await page.locator('#logins-table tbody tr').count(), 24, 'a table row for each hour')
    t.equal(await page.locator('svg#logins-chart[role=img]').count(), 1, 'the chart')
    t.match(await page.locator('#logins-failed').innerText(), /^[1-9]/, 'the failed Logins are counted')
    await shot('dashboard')
    await endPhoneSession(t, page, service, shot)
    t.equal(await authenticateStatus(service, phone), 403, 'her phone\'s token is refused by Authenticate at once')

    await page.click('nav a[href="/console/events"]')
    t.match(await page.locator('#events').innerText(), /session\.end\s+alice\s+root/, 'the event names the account and root as the actor')
    await shot('events')
    await page.selectOption('#filter-event', 'session.end')
    await Promise.all([page.waitForURL(/event=session\.end/), page.click('#filter-button')])
    t.equal(await page.locator('#events tbody tr').count(), 1, 'the filter by event')
    t.same(errors, [], 'no script error, no CSP violation')
  })

  await t.test('the same with JavaScript disabled', async (t) => {
    const phone = await login(service, 'alice', PERSON_PASSWORD)
    const { page, errors } = await browser(t, false)
    await signIn(page, service, '/console/accounts')
    await endPhoneSession(t, page, service)
    t.equal(await authenticateStatus(service, phone), 403, 'refused at once')
    t.same(errors, [])
  })

  await t.test('with JavaScript off, every kind of action: create, set the email, set groups, disable and enable, revoke a key, sign out everywhere', async (t) => {
    const { page, errors } = await browser(t, false)
    const extra = async (name: string): Promise<void> => { await page.screenshot({ path: join(EXTRA_SCREENS, `console-${name}.png`), fullPage: true }) }
    await signIn(page, service, '/console/accounts')
    await page.fill('#new-username', 'dave')
    await page.fill('#new-password', PERSON_PASSWORD)
    await Promise.all([page.waitForURL(/\/console\/accounts\/dave\?done=created$/), page.click('#create-button')])
    t.equal(await page.locator('#notice').innerText(), 'The account was created.')
    const dave = await login(service, 'dave', PERSON_PASSWORD)

    await page.fill('#email', 'dave@example.org')
    await Promise.all([page.waitForURL(/done=email-set$/), page.click('#email-button')])
    t.equal(await page.locator('#fact-email').innerText(), 'dave@example.org', 'the address set from the account page')

    await page.fill('#groups', 'staff, ops')
    await Promise.all([page.waitForURL(/done=groups$/), page.click('#groups-button')])
    t.equal(await page.locator('#fact-groups').innerText(), 'ops, staff')

    await Promise.all([page.waitForURL(/\/dave\/disable$/), page.click('#disable-link')])
    await extra('confirm-disable')
    await Promise.all([page.waitForURL(/done=disabled$/), page.click('#confirm-button')])
    t.match(await page.locator('#fact-status').innerText(), /disabled/)
    t.equal(await authenticateStatus(service, dave), 403, 'disabling ended his token')
    await Promise.all([page.waitForURL(/done=enabled$/), page.click('#enable-button')])
    t.match(await page.locator('#fact-status').innerText(), /active/)

    await page.goto(`${service.baseUrl}/console/accounts/ci-bot`)
    await extra('service-account')
    await Promise.all([page.waitForURL(/\/keys\/[^/]+\/revoke$/), page.click('#keys a.danger')])
    await Promise.all([page.waitForURL(/done=key-revoked$/), page.click('#confirm-button')])
    t.equal(await page.locator('#no-keys').count(), 1, 'the key is gone')

    const bobToken = await login(service, 'bob', PERSON_PASSWORD)
    await page.goto(`${service.baseUrl}/console/accounts/bob`)
    await Promise.all([page.waitForURL(/\/bob\/revoke-all$/), page.click('#revoke-all-link')])
    await Promise.all([page.waitForURL(/done=all-ended$/), page.click('#confirm-button')])
    t.equal(await authenticateStatus(service, bobToken), 403, 'every session of bob ended')
    await page.goto(`${service.baseUrl}/console/webhooks`)
    await extra('webhooks')
    t.same(errors, [])
  })

  await t.test('a person outside the admin group gets the 403 page', async (t) => {
    const { page } = await browser(t, true)
    await page.goto(`${service.baseUrl}/console`)
    await page.fill('#username', 'carol')
    await page.fill('#password', PERSON_PASSWORD)
    const answer = page.waitForResponse((response) => response.url() === `${service.baseUrl}/console`)
    await page.click('button[type=submit].primary')
    t.equal((await answer).status(), 403)
    t.match(await page.locator('#notice').innerText(), /carol, who is not in the group allowed/)
    await page.screenshot({ path: join(EXTRA_SCREENS, 'console-forbidden.png'), fullPage: true })
  })

  await t.test('keyboard only: the focus order reaches the search field and the buttons; every field has a label', async (t) => {
    const { page } = await browser(t, true)
    await signIn(page, service, '/console/accounts')
    const order: string[] = []
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press('Tab')
      order.push(await page.evaluate<string>(FOCUSED))
    }
    t.equal(order[0], 'a:Skip to content', 'first: the skip link')
    t.same(order.slice(1, 6), ['a:Dashboard', 'a:Accounts', 'a:Audit events', 'a:Deliveries', 'button:Sign out'], 'then the sections and sign-out, in reading order')
    const search = order.indexOf('#q')
    t.ok(search > 0, 'the search field is reached')
    t.equal(order[search + 1], '#search-button', 'then its button')
    // Type and submit with the keyboard alone.
    while (await page.evaluate<string>(FOCUSED) !== '#q') await page.keyboard.press('Shift+Tab')
    await page.keyboard.type('car')
    await Promise.all([page.waitForURL(/q=car/), page.keyboard.press('Enter')])
    t.same(await page.locator('#accounts tbody th a').allInnerTexts(), ['carol'])
    // To carol's page by Tab and Enter.
    for (let i = 0; i < 30 && await page.evaluate<string>(FOCUSED) !== 'a:carol'; i++) await page.keyboard.press('Tab')
    await Promise.all([page.waitForURL(/\/console\/accounts\/carol$/), page.keyboard.press('Enter')])
    const reached: string[] = []
    for (let i = 0; i < 25; i++) {
      await page.keyboard.press('Tab')
      reached.push((await page.evaluate<string>(FOCUSED)).replace(/^#/, ''))
    }
    for (const id of ['disable-link', 'revoke-all-link', 'groups', 'groups-button']) t.ok(reached.includes(id), `#${id} is reached by Tab`)
    t.ok(reached.indexOf('disable-link') < reached.indexOf('groups'), 'the actions before the groups form, as they read')

    for (const path of ['/console', '/console/accounts', '/console/accounts/carol', '/console/accounts/carol/disable', '/console/events', '/console/webhooks']) {
      await page.goto(`${service.baseUrl}${path}`)
      const unlabelled = await page.evaluate<string[]>(UNLABELLED)
      t.same(unlabelled, [], `${path}: every field has a label`)
      t.equal(await page.locator('main h1').count(), 1, `${path}: one heading`)
    }
  })

  await t.test('a form of another site posting to the console is refused, and changes nothing', async (t) => {
    const server: Server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<form method="post" action="${service.baseUrl}/console/accounts/bob/disable">
        <input name="confirm" value="yes"></form><script>document.forms[0].submit()</script>`)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    t.teardown(async () => { await new Promise((resolve) => server.close(resolve)) })
    const { page } = await browser(t, true)
    await signIn(page, service)
    const answer = page.waitForResponse((response) => response.url().endsWith('/console/accounts/bob/disable'))
    await page.goto(`http://localhost:${(server.address() as AddressInfo).port}/`)
    t.equal((await answer).status(), 403)
    await page.goto(`${service.baseUrl}/console/accounts/bob`)
    t.match(await page.locator('#fact-status').innerText(), /active/, 'bob is not disabled')
  })
}
