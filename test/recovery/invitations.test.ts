import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { createAdminClient } from '../../src/admin/client.js'
import { buildApp } from '../../src/app/app.js'
import { buildInternalApp } from '../../src/app/internal-listener.js'
import { createAdminApiOperations } from '../../src/cli/adapters/admin-api.js'
import { createInProcessOperations } from '../../src/cli/adapters/in-process.js'
import { runAccountCommand, type Terminal } from '../../src/cli/commands.js'
import { describe } from '../../src/cli/exit-codes.js'
import { parseCommandLine } from '../../src/cli/parse.js'
import { ConfigError, loadConfig } from '../../src/config/config.js'
import { migratedDatabaseUrl } from '../../support/postgres.js'
import { freshRedisPrefix, requireRedis } from '../../support/redis.js'
import { buildTestApp } from '../support/app.js'
import { FORM, form, pathOf, PUBLIC_URL, startSmtp, type TestSmtp } from './support.js'

/**
 * Invitations and addresses, through the admin API and both command-line adapters (which share
 * core/accounts.ts), and the admin API's view of the mail outbox.
 */

const KEY = 'recovery-admin-key-0123456789-abcdefghijkl'
const PASSWORD = 'the first passphrase 1'

interface Service {
  app: FastifyInstance
  internal: FastifyInstance
  smtp: TestSmtp
  admin (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown): Promise<{ statusCode: number, body: Record<string, unknown> }>
  cli (args: string[], adapter: 'in-process' | 'admin API'): Promise<{ code: number, stderr: string }>
}

async function service (t: Test): Promise<Service> {
  const smtp = await startSmtp(t)
  const config = loadConfig({
    DATABASE_URL: await migratedDatabaseUrl(t),
    REDIS_URL: await requireRedis(),
    AUTH_REDIS_KEY_PREFIX: await freshRedisPrefix(t),
    AUTH_ADMIN_KEY: KEY,
    AUTH_TOTP_KEY: Buffer.alloc(32, 9).toString('base64'),
    AUTH_SMTP_URL: smtp.url,
    AUTH_PUBLIC_URL: `${PUBLIC_URL}/`,
    AUTH_MAIL_FROM: 'Example Accounts <accounts@example.org>',
    LOG_LEVEL: 'silent',
    NODE_ENV: 'test'
  })
  t.equal(config.mail?.publicUrl, PUBLIC_URL, 'AUTH_PUBLIC_URL is kept without its trailing slash')
  const app = await buildApp(config)
  await app.ready()
  // Connected before the first request that reads a lock (Redis answers 503 until then).
  await app.backends.tokens.ready()
  const internal = await buildInternalApp(app, config)
  t.teardown(async () => {
    await internal.close()
    await app.close()
  })
  const url = await internal.listen({ host: '127.0.0.1', port: 0 })
  const api = createAdminApiOperations(createAdminClient({ url, key: KEY }))
  return {
    app,
    internal,
    smtp,
    async admin (method, path, payload) {
      const res = await internal.inject({ method, url: path, headers: { authorization: `Bearer ${KEY}` }, ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }) })
      return { statusCode: res.statusCode, body: res.json() }
    },
    async cli (args, adapter) {
      let stderr = ''
      const terminal: Terminal = { out: () => {}, say: (text) => { stderr += `${text}\n` }, readPassword: async () => undefined, isTTY: () => false }
      try {
        const invocation = parseCommandLine(args)
        if (invocation.command !== 'user invite' && invocation.command !== 'user email') throw new Error('not a command of this test')
        const operations = adapter === 'admin API' ? api : createInProcessOperations(config, invocation.command)
        return { code: await runAccountCommand(operations, invocation, terminal), stderr }
      } catch (error) {
        const { message, code } = describe(error)
        return { code, stderr: `${stderr}${message}\n` }
      }
    }
  }
}

async function acceptInvitation (t: Test, { app, smtp }: Service, username: string): Promise<void> {
  const mail = await smtp.next(10_000)
  t.match(mail.subject, /set your password/, 'an invitation mail')
  t.match(mail.text, /works for 7 days/)
  const page = await app.inject({ url: pathOf(mail.link) })
  t.match(page.body, /<h1>Set your password<\/h1>/, 'its page sets the first password')
  t.match(page.body, new RegExp(`<strong>${username}</strong>`))
  const done = await app.inject({ method: 'POST', url: pathOf(mail.link), headers: FORM, payload: form({ new_password: PASSWORD }) })
  t.equal(done.statusCode, 200, 'the password is set')
  const login = await app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username, password: PASSWORD }) })
  t.equal(login.json<{ status: number }>().status, 0, 'and logs in')
}

t.test('admin API: invite, email on the user view and PATCH, the mail deliveries', async (t) => {
  const svc = await service(t)
  const refused = await svc.admin('POST', '/admin/users', { username: 'newbie', invite: true })
  t.equal(refused.statusCode, 400, 'an invitation needs an address')
  t.equal((await svc.admin('POST', '/admin/users', { username: 'newbie', invite: true, email: 'newbie@example.org', password: 'x' })).statusCode, 400, 'and no password')
  t.equal((await svc.admin('POST', '/admin/users', { username: 'newbie', invite: true, email: 'not an address' })).statusCode, 400, 'a bad address is refused')
  t.equal((await svc.admin('GET', '/admin/users/newbie')).statusCode, 404, 'and nothing was made')

  const invited = await svc.admin('POST', '/admin/users', { username: 'newbie', invite: true, email: 'newbie@Example.ORG' })
  t.equal(invited.statusCode, 200)
  t.match(invited.body, { user: { username: 'newbie', email: 'newbie@example.org', kind: 'person' } }, 'the account with its address (the domain lower-cased)')
  const before = await svc.app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username: 'newbie', password: '' }) })
  t.not(before.json<{ status: number }>().status, 0, 'no password logs in before the invitation is accepted')
  await acceptInvitation(t, svc, 'newbie')

  t.equal((await svc.admin('POST', '/admin/users', { username: 'newbie', invite: true, email: 'newbie@example.org' })).statusCode, 409, 'an account with a password is not invited again')

  const created = await svc.admin('POST', '/admin/users', { username: 'fran', password: 'a wholly different passphrase 9', email: 'fran@example.org' })
  t.match(created.body, { user: { email: 'fran@example.org' } }, 'an address given at creation')
  t.equal((await svc.admin('PATCH', '/admin/users/fran', { email: 'nope' })).statusCode, 400, 'a bad address: 400')
  t.match((await svc.admin('GET', '/admin/users/fran')).body, { user: { email: 'fran@example.org' } }, 'and nothing changed')
  t.match((await svc.admin('PATCH', '/admin/users/fran', { email: 'fran.new@example.org' })).body, { user: { email: 'fran.new@example.org' } })
  const removed = await svc.admin('PATCH', '/admin/users/fran', { email: null })
  t.match(removed.body, { user: { email: null } }, 'null removes it')

  const list = await svc.admin('GET', '/admin/mail/deliveries?status=delivered')
  t.equal(list.statusCode, 200)
  t.match(list.body, { deliveries: [{ kind: 'invite', username: 'newbie', to: 'newbie@example.org', status: 'delivered', attempts: 1, last_error: null }], next_cursor: null })
  const id = String((list.body.deliveries as Array<{ id: string }>)[0]?.id)
  t.equal((await svc.admin('POST', `/admin/mail/deliveries/${id}/retry`)).statusCode, 404, 'a delivered mail is not sent again')
  t.equal((await svc.admin('GET', '/admin/mail/deliveries?status=bogus')).statusCode, 400)

  await svc.app.backends.audit.flush()
  const events = await svc.app.backends.audit.list({ username: 'newbie' })
  t.same(events.map((event) => event.event), ['user.add', 'user.invite', 'password.reset', 'login.success'], 'audited')
  t.ok(events.some((event) => event.event === 'password.reset' && event.outcome === 'invitation-accepted'), 'the accepted invitation is a password.reset')
})

for (const adapter of ['in-process', 'admin API'] as const) {
  t.test(`command line (${adapter}): user invite and user email`, async (t) => {
    const svc = await service(t)
    const invited = await svc.cli(['user', 'invite', 'gail', 'gail@example.org'], adapter)
    t.same(invited, { code: 0, stderr: 'invited gail: a link to set the password is on its way (valid 7 days)\n' })
    await acceptInvitation(t, svc, 'gail')
    const emailed = await svc.cli(['user', 'email', 'gail', 'gail.b@example.org'], adapter)
    t.same(emailed, { code: 0, stderr: 'gail\'s email address set\n' })
    t.match((await svc.admin('GET', '/admin/users/gail')).body, { user: { email: 'gail.b@example.org' } })
    const bad = await svc.cli(['user', 'email', 'gail', 'no-at-sign'], adapter)
    t.equal(bad.code, 1, 'a bad address fails')
    t.match(bad.stderr, /email is not a valid address/)
    const usage = await svc.cli(['user', 'invite', 'gail'], adapter)
    t.equal(usage.code, 2, 'an address is required')
  })
}

t.test('mail off: no invitation, no mail routes', async (t) => {
  const { app, config } = await buildTestApp(t, 'embedded', { adminKey: KEY })
  await app.ready()
  const internal = await buildInternalApp(app, config)
  t.teardown(async () => { await internal.close() })
  const res = await internal.inject({ method: 'POST', url: '/admin/users', headers: { authorization: `Bearer ${KEY}` }, payload: { username: 'hal', invite: true, email: 'hal@example.org' } })
  t.equal(res.statusCode, 400)
  t.match(res.json(), { detail: /mail is off/ })
  t.equal((await internal.inject({ url: '/admin/mail/deliveries', headers: { authorization: `Bearer ${KEY}` } })).statusCode, 404)
})

t.test('configuration: AUTH_PUBLIC_URL with AUTH_SMTP_URL, one of the URL and its file', async (t) => {
  t.throws(() => loadConfig({ AUTH_SMTP_URL: 'smtp://mail.example.org:587' }), new ConfigError('AUTH_PUBLIC_URL', 'is required with AUTH_SMTP_URL: the service\'s public origin (https://auth.example.org), which links in mail are built from'))
  t.throws(() => loadConfig({ AUTH_SMTP_URL: 'http://mail.example.org', AUTH_PUBLIC_URL: PUBLIC_URL }), /AUTH_SMTP_URL: must start with smtp:\/\/ or smtps:\/\//)
  t.throws(() => loadConfig({ AUTH_SMTP_URL: 'smtp://u:secret-pw@mail.example.org', AUTH_SMTP_URL_FILE: '/x', AUTH_PUBLIC_URL: PUBLIC_URL }), /set one of them/)
  t.throws(() => loadConfig({ AUTH_SMTP_URL: 'smtp://mail.example.org', AUTH_PUBLIC_URL: `${PUBLIC_URL}/?x=1` }), /AUTH_PUBLIC_URL: must be an origin/)
  const config = loadConfig({ AUTH_SMTP_URL: 'smtps://u:pw@mail.example.org', AUTH_PUBLIC_URL: PUBLIC_URL })
  t.match(config.mail, { from: 'no-reply@auth.example.org', resetTtlMs: 1_800_000, publicUrl: PUBLIC_URL })
  t.equal(loadConfig({}).mail, undefined, 'unset: no mail')
  t.equal(loadConfig({ AUTH_SMTP_URL: 'smtp://mail.example.org', AUTH_PUBLIC_URL: PUBLIC_URL, AUTH_RESET_TTL_SECONDS: '600' }).mail?.resetTtlMs, 600_000)
})
