import t, { type Test } from 'tap'
import { execFile } from 'node:child_process'
import { tmpdir } from 'node:os'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { buildApp } from '../../../src/app/app.js'
import { assembleBackends, openAuditLog } from '../../../src/app/backends.js'
import { loadConfig, type Config } from '../../../src/config/config.js'
import { createPostgresDatabase } from '../../../src/db/postgres.js'
import type { Database } from '../../../src/db/database.js'
import { hashToken } from '@auth-token-service/protocol/token'
import { createSqlAuditLog, type AuditLog, type StoredAuditEvent } from '../../../src/core/stores/audit-log.js'
import { createMemoryTokenStore } from '../../../src/core/stores/memory/token-store.js'
import { buildTestApp, type BackendKind, fixtureAccounts } from '../../support/app.js'
import { testConfig } from '../../support/config.js'
import { freshPglite } from '../../support/pglite.js'
import { rejection } from '../../support/rejection.js'
import { freshPostgresDatabase } from '../../../support/postgres.js'
import { freshRedisPrefix, requireRedis } from '../../../support/redis.js'
import { cliCommand, requireCurrentBuild } from '../../../support/service.js'

/*
 * The audit trail (security.md Logs): every login success and failure,
 * lockout, refusal, logout and account change is a row of `auth_events` with the
 * account, client IP, user agent and outcome, never a secret; the table is
 * append-only; writing never blocks or fails a request; `events` prints it.
 */

const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

/** Secrets of this file: no row and no output may hold one, in any form. */
const secrets = new Set<string>()
function secret (label: string): string {
  const value = `${label}-S3cr&t=+ /%"é-${Math.random().toString(36).slice(2)}`
  secrets.add(value)
  return value
}
function rememberToken (token: string): string {
  secrets.add(token)
  secrets.add(hashToken(token))
  return token
}
function secretForms (value: string): string[] {
  return [value, encodeURIComponent(value), new URLSearchParams({ x: value }).toString().slice(2)]
}
/** Every secret, in each of its forms, found in `text`. */
function leaked (text: string): string[] {
  return [...secrets].flatMap(secretForms).filter((form) => text.includes(form))
}

interface Client { ip: string, ua: string }

function loginRequest (client: Client, username: string, password: string, token?: string): InjectOptions {
  const params: Record<string, string> = { username, password }
  if (token !== undefined) params.token = token
  return {
    method: 'POST',
    url: '/auth/Login',
    headers: { ...FORM, 'user-agent': client.ua },
    remoteAddress: client.ip,
    payload: new URLSearchParams(params).toString()
  }
}

async function login (app: FastifyInstance, client: Client, username: string, password: string, token?: string): Promise<{ status: number, token?: string }> {
  const response = await app.inject(loginRequest(client, username, password, token))
  const body = response.json<{ status: number, token?: string }>()
  if (body.token !== undefined) rememberToken(body.token)
  return { status: response.statusCode, token: body.token }
}

async function logout (app: FastifyInstance, client: Client, token: string): Promise<number> {
  const response = await app.inject({ method: 'POST', url: `/auth/Logout/${token}`, headers: { 'user-agent': client.ua }, remoteAddress: client.ip })
  return response.statusCode
}

interface Expected {
  event: string
  username: string | undefined
  clientIp: string | undefined
  userAgent: string | undefined
  outcome: string | RegExp
  accountId?: string | undefined
}

function assertEvents (t: Test, rows: StoredAuditEvent[], expected: Expected[], what: string): void {
  t.equal(rows.length, expected.length, `${what}: ${expected.length} events`)
  expected.forEach((want, i) => {
    const row = rows[i]
    const label = `${what} #${i + 1} ${want.event}`
    if (row === undefined) {
      t.fail(`${label}: missing`)
      return
    }
    t.equal(row.event, want.event, `${label}: event`)
    t.equal(row.username, want.username, `${label}: username`)
    t.equal(row.clientIp, want.clientIp, `${label}: client_ip`)
    t.equal(row.userAgent, want.userAgent, `${label}: user_agent`)
    if (typeof want.outcome === 'string') t.equal(row.outcome, want.outcome, `${label}: outcome`)
    else t.match(row.outcome, want.outcome, `${label}: outcome`)
    if ('accountId' in want) t.equal(row.accountId, want.accountId, `${label}: account_id`)
    t.ok(row.occurredAt instanceof Date && !Number.isNaN(row.occurredAt.getTime()), `${label}: a time`)
  })
}

/** Every column of every row, as text, searched for every secret. */
async function assertNoSecretInTable (t: Test, database: Database, what: string): Promise<void> {
  const { rows } = await database.query<Record<string, unknown>>('SELECT * FROM auth_events')
  t.ok(rows.length > 0, `${what}: ${rows.length} rows scanned`)
  const found = rows.flatMap((row) => Object.values(row).flatMap((value) => leaked(value instanceof Date ? value.toISOString() : String(value))))
  t.same(found, [], `${what}: no column of any row holds a password or a token (or its hash)`)
}

for (const kind of ['real', 'embedded'] as BackendKind[]) {
  t.test(`${kind}: every login, logout and account change is an audit event`, async (t) => {
    // The limiter's Redis keys under a prefix of this test's own (buildTestApp keeps only the token store's apart).
    const limiterPrefix = kind === 'real' ? { redisKeyPrefix: await freshRedisPrefix(t) } : {}
    const { app, database } = await buildTestApp(t, kind, { maxFailedLogins: 3, lockoutSeconds: 60, maxLockoutSeconds: 120, ...limiterPrefix })
    const audit = app.backends.audit
    const pw = { alice: secret('alice'), aliceNew: secret('alice-new'), bob: secret('bob'), carol: secret('carol'), wrong: secret('wrong') }
    const laptop: Client = { ip: '198.51.100.10', ua: 'Mozilla/5.0 (audit test laptop)' }
    const phone: Client = { ip: '2001:db8::7', ua: 'audit-test-phone/2.1' }
    const attacker: Client = { ip: '203.0.113.66', ua: 'curl/8.0' }

    const alice = await fixtureAccounts(app).add('alice', pw.alice, false)
    const bob = await fixtureAccounts(app).add('bob', pw.bob, false)
    const carol = await fixtureAccounts(app).add('carol', pw.carol, false)
    const admin = (event: string, account: { username: string, id: string }, outcome: string): Expected =>
      ({ event, username: account.username, clientIp: undefined, userAgent: 'admin', outcome, accountId: account.id })
    const expected: Expected[] = [admin('user.add', alice, 'created'), admin('user.add', bob, 'created'), admin('user.add', carol, 'created')]
    const at = (event: string, username: string, client: Client, outcome: string | RegExp, accountId?: string): Expected =>
      ({ event, username, clientIp: client.ip, userAgent: client.ua, outcome, accountId })

    const first = await login(app, laptop, 'alice', pw.alice)
    t.equal(first.status, 200, 'alice logs in')
    expected.push(at('login.success', 'alice', laptop, 'issued', alice.id))
    const refreshed = await login(app, laptop, 'alice', pw.alice, first.token)
    t.equal(refreshed.token, first.token, 'alice refreshes her token')
    expected.push(at('login.success', 'alice', laptop, 'refreshed', alice.id))

    t.equal((await login(app, phone, 'alice', pw.wrong)).status, 401, 'wrong password')
    expected.push(at('login.failure', 'alice', phone, 'wrong-password', alice.id))
    t.equal((await login(app, attacker, 'nobody', pw.wrong)).status, 401, 'unknown user')
    expected.push(at('login.failure', 'nobody', attacker, 'unknown-user', undefined))

    const bobs = await login(app, phone, 'bob', pw.bob)
    t.equal(bobs.status, 200, 'bob logs in')
    expected.push(at('login.success', 'bob', phone, 'issued', bob.id))
    t.equal((await app.accounts.setDisabled('bob', true)).ended, 1, 'disabling bob ends his token')
    expected.push(admin('user.disable', bob, 'tokens-ended-1'))
    t.equal((await login(app, phone, 'bob', pw.bob)).status, 401, 'disabled account, right password')
    expected.push(at('login.failure', 'bob', phone, 'disabled', bob.id))
    await app.accounts.setDisabled('bob', false)
    expected.push(admin('user.enable', bob, 'tokens-ended-0'))

    for (let i = 1; i <= 3; i++) {
      t.equal((await login(app, attacker, 'carol', pw.wrong)).status, 401, `carol: failure ${i}`)
      expected.push(at('login.failure', 'carol', attacker, 'wrong-password', carol.id))
    }
    expected.push(at('login.lockout', 'carol', attacker, /^locked-(60|59)s$/, carol.id))
    t.equal((await login(app, laptop, 'carol', pw.carol)).status, 429, 'carol is locked, even with her password')
    expected.push(at('login.refused', 'carol', laptop, 'account-locked'))

    t.equal(await logout(app, phone, first.token ?? ''), 200, "alice's token logged out from her phone")
    expected.push(at('logout', 'alice', phone, 'terminated', alice.id))
    t.equal(await logout(app, attacker, first.token ?? ''), 403, 'a second logout of it fails, and is no event')

    await login(app, laptop, 'alice', pw.alice)
    expected.push(at('login.success', 'alice', laptop, 'issued', alice.id))
    t.equal((await fixtureAccounts(app).setPassword('alice', pw.aliceNew)).ended, 1, "a new password ends alice's token")
    expected.push(admin('user.passwd', alice, 'tokens-ended-1'))
    await login(app, laptop, 'alice', pw.aliceNew)
    await login(app, phone, 'alice', pw.aliceNew)
    expected.push(at('login.success', 'alice', laptop, 'issued', alice.id), at('login.success', 'alice', phone, 'issued', alice.id))
    t.equal((await app.accounts.revokeSessions('alice')).ended, 2, "revoking ends alice's two tokens")
    expected.push(admin('sessions.revoke', alice, 'tokens-ended-2'))

    await audit.flush()
    t.equal(audit.dropped(), 0, 'nothing dropped')
    assertEvents(t, await audit.list({}), expected, 'all events')
    assertEvents(t, await audit.list({ username: 'carol' }), expected.filter((e) => e.username === 'carol'), "carol's events")
    const all = await audit.list({})
    const cut = all[all.length - 3]?.occurredAt ?? new Date()
    const since = await audit.list({ since: cut })
    t.ok(since.length >= 3 && since.every((e) => e.occurredAt.getTime() >= cut.getTime()), '--since keeps the later events only')
    t.same((await audit.list({ limit: 2 })).map((e) => e.event), ['user.add', 'user.add'], 'a limit keeps the oldest')

    await assertNoSecretInTable(t, database, kind)

    t.test('auth_events is append-only', async (t) => {
      const before = (await database.query<{ n: string | number }>('SELECT count(*)::int AS n FROM auth_events')).rows[0]?.n
      for (const sql of [
        "UPDATE auth_events SET outcome = 'tampered'",
        "UPDATE auth_events SET username = 'someone-else' WHERE username = 'alice'",
        'DELETE FROM auth_events',
        "DELETE FROM auth_events WHERE event = 'login.failure'",
        'TRUNCATE auth_events'
      ]) {
        t.match(await rejection(database.query(sql)), { message: /append-only/ }, `${sql.split(' ')[0] ?? ''} fails: ${sql}`)
      }
      t.equal((await database.query<{ n: string | number }>('SELECT count(*)::int AS n FROM auth_events')).rows[0]?.n, before, 'every row is still there')
      t.equal((await database.query<{ n: number }>("SELECT count(*)::int AS n FROM auth_events WHERE outcome = 'tampered' OR username = 'someone-else'")).rows[0]?.n, 0, 'and unchanged')
      await login(app, laptop, 'alice', pw.aliceNew)
      await audit.flush()
      t.equal((await audit.list({})).length, expected.length + 1, 'adding rows still works')
    })
  })
}

/** An embedded app whose audit log is the one given (users in PGlite, tokens in-process). */
async function appWithAudit (t: Test, config: Config, makeAudit: (database: Database) => AuditLog): Promise<{ app: FastifyInstance, database: Database }> {
  const database = await freshPglite()
  const tokens = createMemoryTokenStore({ denyTtlMs: 60_000 })
  const backends = assembleBackends(config, { database, tokens, audit: makeAudit(database) })
  const app = await buildApp(config, { backends, logger: { level: 'silent' } })
  t.teardown(async () => {
    await app.close()
    await backends.close()
  })
  return { app, database }
}

/** Drives `rounds` of success, failure and logout; every request must succeed as it would without an audit log. */
async function driveRequests (t: Test, app: FastifyInstance, password: string, rounds: number): Promise<number> {
  const client = { ip: '192.0.2.1', ua: 'audit-drop-test' }
  let events = 0
  const started = Date.now()
  await Promise.all(Array.from({ length: rounds }, async (_, i) => {
    const ok = await login(app, client, 'dora', password)
    const failed = await login(app, client, `ghost${i}`, 'nope')
    const out = await logout(app, client, ok.token ?? '')
    if (ok.status !== 200 || failed.status !== 401 || out !== 200) t.fail(`round ${i}: ${ok.status} ${failed.status} ${out}`)
    events += 3
  }))
  t.pass(`${rounds * 3} requests answered as usual in ${Date.now() - started} ms`)
  return events
}

t.test('an unreachable audit database fails no request; the events are dropped and counted', async (t) => {
  const config = testConfig({ maxFailedLoginsPerIp: 1000 })
  const drops: Array<{ count: number, total: number, cause: unknown }> = []
  const dead = createPostgresDatabase({ connectionString: 'postgres://postgres@127.0.0.1:1/none', connectionTimeoutMillis: 500 })
  t.teardown(async () => { await dead.close() })
  let audit: AuditLog | undefined
  const { app } = await appWithAudit(t, config, () => {
    audit = createSqlAuditLog(dead, { onDrop: (count, total, cause) => { drops.push({ count, total, cause }) } })
    return audit
  })
  await fixtureAccounts(app).add('dora', 'dora-secret', false)
  const events = 1 + await driveRequests(t, app, 'dora-secret', 5)
  await audit?.flush()
  t.equal(audit?.dropped(), events, `all ${events} events dropped and counted`)
  t.ok(drops.length > 0, `onDrop called ${drops.length} time(s)`)
  t.equal(drops.at(-1)?.total, events, 'onDrop is told the running total')
  t.equal(drops.reduce((sum, d) => sum + d.count, 0), events, 'onDrop is told every dropped event')
  t.ok(drops.every((d) => d.cause instanceof Error), 'with the cause')
  t.equal((await app.inject(loginRequest({ ip: '192.0.2.2', ua: 'after' }, 'dora', 'dora-secret'))).statusCode, 200, 'a normal Login still succeeds')
})

t.test('a full buffer drops events, counts them and logs it; a stalled database blocks no request', async (t) => {
  const config = testConfig({ maxFailedLoginsPerIp: 1000, auditBufferSize: 1 })
  const warnings: Array<{ fields: unknown, message: string | undefined }> = []
  const log = {
    info: () => {},
    error: () => {},
    warn: (fields: unknown, message?: string) => { warnings.push({ fields, message }) }
  }
  // Audit inserts hang until released: the first batch is written, the buffer holds one more, the rest is dropped.
  let release: () => void = () => {}
  const gate = new Promise<void>((resolve) => { release = resolve })
  t.teardown(() => { release() })
  let audit: AuditLog | undefined
  let database: Database | undefined
  const built = await appWithAudit(t, config, (db) => {
    database = db
    const stalled: Database = {
      ...db,
      query: async (sql, params) => {
        if (sql.startsWith('INSERT INTO auth_events')) await gate
        return await db.query(sql, params)
      }
    }
    audit = openAuditLog(config, stalled, log)
    return audit
  })
  const { app } = built
  await fixtureAccounts(app).add('dora', 'dora-secret', false)
  const events = 1 + await driveRequests(t, app, 'dora-secret', 6)
  const dropped = audit?.dropped() ?? 0
  t.ok(dropped >= events - 2, `${dropped} of ${events} events dropped while the database stalls (buffer of 1)`)
  t.equal(warnings.length, 1, 'the drops are logged, once per 10 s')
  t.match(warnings[0], { message: 'audit events dropped', fields: { dropped: 1, droppedTotal: Number } }, 'a warning with the counts')
  const exposition = await app.metrics.exposition()
  t.match(exposition, /^# TYPE auth_audit_events_dropped_total counter$/m, 'a Prometheus counter')
  t.match(exposition, new RegExp(`^auth_audit_events_dropped_total ${dropped}$`, 'm'), 'that counts them')

  release()
  await audit?.flush()
  const rows = (await database?.query<{ n: number }>('SELECT count(*)::int AS n FROM auth_events'))?.rows[0]?.n ?? -1
  t.equal(rows + (audit?.dropped() ?? 0), events, `written (${rows}) + dropped = recorded (${events})`)
  t.equal((await app.inject(loginRequest({ ip: '192.0.2.2', ua: 'after' }, 'dora', 'dora-secret'))).statusCode, 200, 'a normal Login still succeeds')
})

/*
 * `auth-token-service events` as an operator runs it: the built binary, a clean
 * environment, a fresh Postgres database and a Redis key prefix of its own.
 */

interface Run { args: string[], code: number | null, stdout: string, stderr: string }

async function cli (env: Record<string, string>, args: string[], stdin = ''): Promise<Run> {
  return await new Promise((resolve, reject) => {
    const child = execFile(...cliCommand(args), { env, cwd: tmpdir(), timeout: 20_000, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error !== null && typeof error.code !== 'number') {
        reject(new Error(`auth-token-service ${args.join(' ')} did not exit by itself (${error.signal ?? error.message}); stderr: ${stderr}`))
        return
      }
      resolve({ args, code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr })
    })
    child.stdin?.on('error', () => {})
    child.stdin?.end(stdin)
  })
}

/** `events` output: one event per line, six tab-separated cells. */
function eventLines (run: Run): string[][] {
  return run.stdout.split('\n').filter((line) => line !== '').map((line) => line.split('\t'))
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

t.test('the events command', async (t) => {
  // `npm test` builds first (pretest); running this file alone needs a build that is current.
  requireCurrentBuild()

  const backendEnv = {
    DATABASE_URL: await freshPostgresDatabase(t),
    REDIS_URL: await requireRedis(),
    AUTH_REDIS_KEY_PREFIX: await freshRedisPrefix(t)
  }
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? tmpdir(), LOG_LEVEL: 'silent', ...backendEnv }
  const runs: Run[] = []
  const run = async (args: string[], stdin = ''): Promise<Run> => {
    const result = await cli(env, args, stdin)
    runs.push(result)
    return result
  }

  const migrated = await run(['migrate'])
  t.equal(migrated.code, 0, migrated.stderr)
  const empty = await run(['events'])
  t.equal(empty.code, 0, empty.stderr)
  t.equal(empty.stdout, '', 'no events yet: no output')

  const pw = { alice: secret('cli-first'), bob: secret('cli-second'), aliceNew: secret('cli-renewed') }
  t.equal((await run(['user', 'add', 'alice'], `${pw.alice}\n`)).code, 0, 'user add alice')
  t.equal((await run(['user', 'add', 'bob'], `${pw.bob}\n`)).code, 0, 'user add bob')

  // Logins through the service, in-process, on the same database and Redis prefix.
  const app = await buildApp(loadConfig({ ...backendEnv, LOG_LEVEL: 'silent', NODE_ENV: 'test' }))
  t.teardown(async () => { await app.close() })
  const tokens = app.backends.tokens
  if ('ready' in tokens && typeof tokens.ready === 'function') await (tokens.ready as () => Promise<void>)()
  const desk: Client = { ip: '198.51.100.20', ua: 'desk browser/1.0' }
  t.equal((await login(app, desk, 'alice', pw.alice)).status, 200)
  t.equal((await login(app, desk, 'bob', 'wrong')).status, 401)
  // User text with tabs, CR/LF and control characters: it must stay inside its cell and line.
  const nasty: Client = { ip: '203.0.113.9', ua: 'evil\tagent\r\nforged\tline\u0007' }
  // A username with controls in it is refused outright (canonical usernames) and records nothing.
  t.equal((await login(app, nasty, 'mallory\n2020-01-01T00:00:00.000Z\tlogin.success\talice', 'x')).status, 400)
  t.equal((await login(app, nasty, 'mallory', 'x')).status, 401)
  await app.backends.audit.flush()

  await new Promise((resolve) => setTimeout(resolve, 20))
  const midpoint = new Date()
  await new Promise((resolve) => setTimeout(resolve, 20))
  t.equal((await run(['sessions', 'revoke', 'alice'])).code, 0, 'sessions revoke alice')
  t.equal((await run(['user', 'passwd', 'alice'], `${pw.aliceNew}\n`)).code, 0, 'user passwd alice')
  t.equal((await run(['user', 'disable', 'bob'])).code, 0, 'user disable bob')
  t.equal((await run(['user', 'enable', 'bob'])).code, 0, 'user enable bob')

  const all = await run(['events'])
  t.equal(all.code, 0, all.stderr)
  const lines = eventLines(all)
  const count = (await app.backends.database.query<{ n: number }>('SELECT count(*)::int AS n FROM auth_events')).rows[0]?.n
  t.equal(lines.length, count, `one line per stored event (${String(count)}): user text forged no line`)
  t.ok(lines.every((cells) => cells.length === 6), 'six tab-separated cells on every line: user text forged no cell')
  t.ok(lines.every((cells) => ISO.test(cells[0] ?? '')), 'the first cell is an ISO 8601 UTC time')
  const times = lines.map((cells) => Date.parse(cells[0] ?? ''))
  t.same(times, [...times].sort((a, b) => a - b), 'oldest first')
  t.same(lines.map((cells) => cells.slice(1)), [
    ['user.add', 'alice', 'created', '-', 'cli'],
    ['user.add', 'bob', 'created', '-', 'cli'],
    ['login.success', 'alice', 'issued', desk.ip, desk.ua],
    ['login.failure', 'bob', 'wrong-password', desk.ip, desk.ua],
    ['login.failure', 'mallory', 'unknown-user', nasty.ip, 'evil\\u0009agent\\u000d\\u000aforged\\u0009line\\u0007'],
    ['sessions.revoke', 'alice', 'tokens-ended-1', '-', 'cli'],
    ['user.passwd', 'alice', 'tokens-ended-0', '-', 'cli'],
    ['user.disable', 'bob', 'tokens-ended-0', '-', 'cli'],
    ['user.enable', 'bob', 'tokens-ended-0', '-', 'cli']
  ], 'event, username, outcome, ip, user agent of every event; control characters (tabs too) escaped')

  const alices = await run(['events', '--user', 'alice'])
  t.equal(alices.code, 0, alices.stderr)
  t.same(eventLines(alices).map((cells) => [cells[1], cells[2]]), [
    ['user.add', 'alice'], ['login.success', 'alice'], ['sessions.revoke', 'alice'], ['user.passwd', 'alice']
  ], '--user alice: her events only')
  const nobody = await run(['events', '--user', 'nobody'])
  t.equal(nobody.code, 0, nobody.stderr)
  t.equal(nobody.stdout, '', '--user of no events: no output')

  const later = await run(['events', '--since', midpoint.toISOString()])
  t.equal(later.code, 0, later.stderr)
  t.same(eventLines(later).map((cells) => cells[1]), ['sessions.revoke', 'user.passwd', 'user.disable', 'user.enable'], '--since: the events from then on')
  const both = await run(['events', '--user', 'bob', '--since', midpoint.toISOString()])
  t.same(eventLines(both).map((cells) => cells[1]), ['user.disable', 'user.enable'], '--user and --since together')
  const dateOnly = await run(['events', '--since', '2000-01-01'])
  t.equal(eventLines(dateOnly).length, lines.length, '--since with a date only')

  for (const args of [['events', '--since', 'garbage'], ['events', '--since', ''], ['events', '--user'], ['events', 'extra']]) {
    const bad = await run(args)
    t.equal(bad.code, 2, `exit 2 for ${JSON.stringify(args)}`)
    t.match(bad.stderr, /^auth-token-service: .+\nRun 'auth-token-service --help' for usage\.\n$/, `the problem and where the usage is, on stderr, for ${JSON.stringify(args)}`)
    t.equal(bad.stdout, '', `nothing on stdout for ${JSON.stringify(args)}`)
  }

  const printed = runs.flatMap((r) => leaked(r.stdout + r.stderr))
  t.same(printed, [], `no password or token in the output of ${runs.length} runs`)
})
