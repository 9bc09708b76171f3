import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core'
import t, { type Test } from 'tap'
import { startService } from '../../../support/service.js'
import { freePort, tempDir } from '../../../support/processes.js'
import { seedMigratedDataDir } from '../../support/pglite-template.js'

/*
 * /docs as a person uses it: the built service on the embedded default
 * with a real account, no setting beyond it, and the Swagger UI page where the README sends
 * people (the internal listener), in a real headless Chromium (Debian's, never a downloaded
 * one). Login (Try it out, fill the fields, Execute), then Authenticate with the token it gave,
 * then Logout: each shows Success in the page. A page of another site posting to Login is still
 * refused. Set ATS_DOCS_SCREENSHOTS to a directory to keep what the page looked like.
 */

const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync']
const screenshots = process.env.ATS_DOCS_SCREENSHOTS

if (!existsSync(CHROMIUM)) {
  t.fail(`no Chromium at ${CHROMIUM}: install Debian's (apt-get install chromium; bash .ci/run does it when missing)`)
} else {
  await run(t)
}

async function run (t: Test): Promise<void> {
  const account = { username: 'docs-reader', password: `p&ss w=rd+%/é ${randomBytes(6).toString('hex')}` }
  const internalPort = await freePort()
  const service = await startService(t, {
    // A migrated database to start on: making one (seconds of CPU) is not what this file tests.
    AUTH_DATA_DIR: await seedMigratedDataDir(await tempDir(t, 'ats-docs-data-')),
    AUTH_BOOTSTRAP_USERNAME: account.username,
    AUTH_BOOTSTRAP_PASSWORD: account.password,
    LOG_LEVEL: 'warn',
    INTERNAL_PORT: String(internalPort)
  })
  const docsOrigin = `http://127.0.0.1:${internalPort}`

  const context: BrowserContext = await chromium.launchPersistentContext(await tempDir(t, 'ats-docs-chromium-'), {
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
    headless: true,
    viewport: { width: 1200, height: 900 },
    timeout: 60_000
  })
  t.teardown(async () => { await context.close() })
  const page = context.pages()[0] ?? await context.newPage()
  page.setDefaultTimeout(30_000)
  const pageErrors: string[] = []
  page.on('pageerror', (error) => { pageErrors.push(error.message) })
  if (screenshots !== undefined) await mkdir(screenshots, { recursive: true })
  const snap = async (target: Page | Locator, name: string): Promise<void> => {
    if (screenshots !== undefined) await target.screenshot({ path: join(screenshots, `${name}.png`) })
  }

  await page.goto(`${docsOrigin}/docs`)
  await page.locator('.opblock').first().waitFor()
  await snap(page, 'docs')

  let token = ''

  await t.test('Login: Try it out, fill the form\'s username and password, Execute: Success, the password in no URL', async (t) => {
    const login = await tryItOut(page, 'operations-tokens-post_auth_Login')
    t.equal(await login.locator('tr[data-param-name="password"]').count(), 0, 'no query field for the password')
    const fields = login.locator('tr[data-property-name="username"] input[type=text], tr[data-property-name="password"] input[type=text]')
    t.same(await fields.evaluateAll((inputs) => inputs.map((input) => (input as unknown as { value: string }).value)), ['', ''], 'the form starts empty')
    await login.locator('tr[data-property-name="username"] input[type=text]').fill(account.username)
    await login.locator('tr[data-property-name="password"] input[type=text]').fill(account.password)
    const answer = await execute(login)
    await snap(login, 'login')
    t.equal(answer.code, '200', 'the page shows HTTP 200')
    t.match(answer.body, { status: 0, message: 'Success', token: /^2[A-Za-z0-9_-]{45}$/ }, 'the page shows Success and a token')
    token = typeof answer.body.token === 'string' ? answer.body.token : ''
    const curl = await login.locator('.curl-command').innerText()
    t.match(curl, /-d ['"]username=/, 'the generated curl sends a form body')
    t.notMatch(curl, /Login\?[^'" ]*password/, 'and no password in its URL')
  })

  await t.test('Authenticate with that token: Success', async (t) => {
    const authenticate = await tryItOut(page, 'operations-tokens-get_auth_Authenticate')
    await authenticate.locator('tr[data-param-name="token"] input[type=text]').fill(token)
    const answer = await execute(authenticate)
    await snap(authenticate, 'authenticate')
    t.equal(answer.code, '200', 'the page shows HTTP 200')
    t.match(answer.body, { status: 0, message: 'Success', username: account.username }, 'the page shows Success for the account')
  })

  await t.test('Logout with that token: Success; Authenticate then shows Unauthorized', async (t) => {
    const logout = await tryItOut(page, 'operations-tokens-post_auth_Logout')
    await logout.locator('tr[data-param-name="token"] input[type=text]').fill(token)
    const answer = await execute(logout)
    await snap(logout, 'logout')
    t.equal(answer.code, '200', 'the page shows HTTP 200')
    t.same(answer.body, { status: 0, message: 'Success' }, 'the page shows Success')
    const again = await execute(page.locator('#operations-tokens-get_auth_Authenticate'))
    t.equal(again.code, '403', 'the ended token: HTTP 403')
    t.same(again.body, { status: 403, message: 'Unauthorized' })
  })

  await t.test('a bad request shows what is wrong', async (t) => {
    // A JSON body without the password (the form's fields are required: the page itself asks for them).
    const login = page.locator('#operations-tokens-post_auth_Login')
    await login.locator('.opblock-section-request-body select').first().selectOption('application/json')
    await login.locator('.opblock-section-request-body textarea').first().fill(JSON.stringify({ username: account.username }))
    const answer = await execute(login)
    await snap(login, 'bad-request')
    t.equal(answer.code, '400', 'the page shows HTTP 400')
    t.same(answer.body, { status: 400, message: 'Bad Request', detail: 'password is required' }, 'and what is wrong')
  })

  await t.test('Login by a JSON body, then Authenticate by the cookie Login set', async (t) => {
    const login = page.locator('#operations-tokens-post_auth_Login')
    await login.locator('.opblock-section-request-body textarea').first().fill(JSON.stringify(account))
    const answer = await execute(login)
    await snap(login, 'login-form')
    t.equal(answer.code, '200', 'the page shows HTTP 200')
    t.match(answer.body, { status: 0, message: 'Success' }, 'the page shows Success')
    // No token in the field: the browser sends the AuthToken1 cookie Login set, as the page says.
    const authenticate = page.locator('#operations-tokens-get_auth_Authenticate')
    await authenticate.locator('tr[data-param-name="token"] input[type=text]').fill('')
    const byCookie = await execute(authenticate)
    t.equal(byCookie.code, '200', 'Authenticate without a token: HTTP 200')
    t.match(byCookie.body, { status: 0, message: 'Success', username: account.username }, 'by the cookie')
  })

  await t.test('every other operation answers Success with the fields it shows', async (t) => {
    // Path-style Login gives the token the others take in their path field.
    const legacy = await tryItOut(page, 'operations-tokens-post_auth_Login__username___password_')
    await legacy.locator('tr[data-param-name="username"][data-param-in="path"] input[type=text]').fill(account.username)
    await legacy.locator('tr[data-param-name="password"][data-param-in="path"] input[type=text]').fill(account.password)
    const login = await execute(legacy)
    t.match(login, { code: '200', body: { status: 0, message: 'Success', token: /^2[A-Za-z0-9_-]{45}$/ } }, 'Login, path style')
    const pathToken = typeof login.body.token === 'string' ? login.body.token : ''
    for (const [id, field] of [
      ['operations-tokens-post_auth_Authenticate', 'token'],
      ['operations-tokens-get_auth_Authenticate__token_', 'token'],
      ['operations-tokens-post_auth_Authenticate__token_', 'token'],
      ['operations-operations-get_health_live', undefined],
      ['operations-operations-get_health_ready', undefined],
      ['operations-tokens-post_auth_Logout__token_', 'token']
    ] as const) {
      const block = await tryItOut(page, id)
      if (field !== undefined) await block.locator(`tr[data-param-name="${field}"] input[type=text]`).fill(pathToken)
      const answer = await execute(block)
      t.match(answer, { code: '200', body: { status: 0, message: 'Success' } }, id.replace('operations-', ''))
    }
  })

  await t.test('a page of another site posting a Login form is refused, on the docs\' listener and on the public port', async (t) => {
    // A real cross-site form post: Chromium sends Origin and Sec-Fetch-Site itself.
    const other = 'http://cross-site.test'
    await page.route(`${other}/**`, async (route) => {
      const target = new URL(route.request().url()).searchParams.get('to') ?? ''
      await route.fulfill({
        contentType: 'text/html',
        body: `<form method="post" action="${target}/auth/Login"><input name="username" value="${account.username}">` +
          `<input name="password" value="${account.password.replace(/&/g, '&amp;').replace(/"/g, '&quot;')}"><button>go</button></form>`
      })
    })
    for (const target of [docsOrigin, service.baseUrl]) {
      await page.goto(`${other}/?to=${encodeURIComponent(target)}`)
      const [answer] = await Promise.all([page.waitForResponse(`${target}/auth/Login`), page.locator('button').click()])
      t.equal(answer.status(), 403, `${target}: HTTP 403`)
      t.same(await answer.json(), { status: 403, message: 'Forbidden', detail: 'cross-site request' }, `${target}: a cross-site request`)
      t.notOk((await answer.allHeaders())['set-cookie'], `${target}: no cookie set`)
    }
  })

  t.same(pageErrors, [], 'no script error in the page')
}

/** Opens an operation and presses Try it out. */
async function tryItOut (page: Page, id: string): Promise<Locator> {
  const block = page.locator(`#${id}`)
  await block.locator('.opblock-summary').click()
  await block.getByRole('button', { name: 'Try it out' }).click()
  return block
}

/** Presses Execute and reads the answer the page shows: the HTTP status and the parsed body. */
async function execute (block: Locator): Promise<{ code: string, body: Record<string, unknown> }> {
  const live = block.locator('.live-responses-table')
  // Swagger UI replaces the answer shown: wait for the old one to go before reading the new one.
  const clear = block.getByRole('button', { name: 'Clear' })
  if (await clear.count() > 0) await clear.click()
  await live.waitFor({ state: 'detached' })
  await block.getByRole('button', { name: 'Execute' }).click()
  const row = live.locator('tr.response').first()
  await row.waitFor()
  const code = (await row.locator('.response-col_status').innerText()).trim()
  const text = await row.locator('.response-col_description pre').first().innerText()
  const body: unknown = JSON.parse(text)
  return { code, body: typeof body === 'object' && body !== null ? body as Record<string, unknown> : {} }
}
