import { existsSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { chromium, type BrowserContext } from 'playwright-core'
import t, { type Test } from 'tap'
import { startService } from '../../../support/service.js'
import { tempDir } from '../../../support/processes.js'

/*
 * Login CSRF in a real browser (Debian's headless Chromium): a page of another origin posts a
 * form to Login. Served from `localhost` it is cross-site to the service on 127.0.0.1; from
 * 127.0.0.1 on another port, same-site but another origin. Both are refused and the browser
 * gets no cookie; the service's own page logs in; a cross-site <script> JSONP Authenticate works.
 */

const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync']
const PASSWORD = 'correct horse battery staple'

if (!existsSync(CHROMIUM)) {
  t.fail(`no Chromium at ${CHROMIUM}: install Debian's (apt-get install chromium; bash .ci/run does it when missing)`)
} else {
  await run(t)
}

/** The attacker's site: one page, given by the test. */
async function attackerSite (t: Test, page: () => string): Promise<number> {
  const server: Server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => { await new Promise((resolve) => server.close(resolve)) })
  return (server.address() as AddressInfo).port
}

async function run (t: Test): Promise<void> {
  const service = await startService(t, {
    AUTH_DATA_DIR: await tempDir(t, 'ats-csrf-data-'),
    AUTH_BOOTSTRAP_USERNAME: 'alice',
    AUTH_BOOTSTRAP_PASSWORD: PASSWORD,
    INTERNAL_PORT: '0',
    LOG_LEVEL: 'warn'
  })
  let html = ''
  const attackerPort = await attackerSite(t, () => html)
  const context: BrowserContext = await chromium.launchPersistentContext(await tempDir(t, 'ats-csrf-chromium-'), {
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
    headless: true,
    timeout: 60_000
  })
  t.teardown(async () => { await context.close() })
  const page = context.pages()[0] ?? await context.newPage()
  page.setDefaultTimeout(30_000)
  const cookies = async (): Promise<string[]> => (await context.cookies(service.baseUrl)).map((cookie) => cookie.name)

  const formPost = `<form method="post" action="${service.baseUrl}/auth/Login">
    <input name="username" value="alice"><input name="password" value="${PASSWORD}"></form>
    <script>document.forms[0].submit()</script>`

  for (const [what, host] of [['cross-site (localhost)', 'localhost'], ['same-site, another origin (127.0.0.1, another port)', '127.0.0.1']]) {
    await t.test(`a form POST from a page ${what} is refused, and sets no cookie`, async (t) => {
      html = formPost
      const answer = page.waitForResponse((response) => response.url() === `${service.baseUrl}/auth/Login`)
      await page.goto(`http://${host}:${attackerPort}/`)
      const response = await answer
      t.equal(response.status(), 403)
      t.same(await response.json(), { status: 403, message: 'Forbidden', detail: 'cross-site request' })
      t.same(await cookies(), [], 'the browser holds no AuthToken1')
    })
  }

  await t.test('the service\'s own page logs in (same origin)', async (t) => {
    await page.goto(`${service.baseUrl}/health/live`)
    const status = await page.evaluate(async (password) => {
      const response = await fetch('/auth/Login', { method: 'POST', body: new URLSearchParams({ username: 'alice', password }) })
      return response.status
    }, PASSWORD)
    t.equal(status, 200)
    t.same(await cookies(), ['AuthToken1'], 'the cookie is set')
  })

  await t.test('JSONP Authenticate from a cross-site page keeps working', async (t) => {
    const login = await fetch(`${service.baseUrl}/auth/Login`, { method: 'POST', body: new URLSearchParams({ username: 'alice', password: PASSWORD }) })
    const { token } = await login.json() as { token: string }
    html = `<script>function onAuth () { return null }</script>
      <script src="${service.baseUrl}/auth/Authenticate/${token}?jsonpFunction=onAuth"></script>
      <script>document.title = JSON.stringify(onAuth())</script>`
    await page.goto(`http://localhost:${attackerPort}/`)
    t.same(JSON.parse(await page.title()), { status: 0, message: 'Success' })
  })
}
