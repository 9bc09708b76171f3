import t, { type Test } from 'tap'
import type { Database } from '../../src/db/database.js'
import { fixtureAccounts } from '../support/app.js'
import { askReset, buildRecoveryApp, FORM, form, pathOf, PUBLIC_URL, type RecoveryApp } from './support.js'

/**
 * Mail never blocks a request and is never lost: an SMTP server that refuses (550) or hangs keeps
 * the mail queued, and it goes out once the server is back. What is stored and logged holds no
 * link secret and no address's local part. Links come from AUTH_PUBLIC_URL whatever the request says.
 */

const PASSWORD = 'correct horse battery'

async function withAccount (t: Test, smtpMode: 'accept' | 'refuse' | 'hang' = 'accept'): Promise<RecoveryApp> {
  const built = await buildRecoveryApp(t, {}, smtpMode)
  const accounts = fixtureAccounts(built.app)
  await accounts.add('dana', PASSWORD, false)
  await accounts.setEmail('dana', 'dana.private@example.org')
  return built
}

interface DeliveryRow { status: string, attempts: number, last_error: string | null, sealed: boolean }

async function delivery (database: Database): Promise<DeliveryRow | undefined> {
  const { rows } = await database.query<DeliveryRow>('SELECT status, attempts, last_error, sealed_secret IS NOT NULL AS sealed FROM mail_deliveries ORDER BY id DESC LIMIT 1')
  return rows[0]
}

async function until (t: Test, what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!await check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  t.pass(what)
}

for (const mode of ['refuse', 'hang'] as const) {
  t.test(`an SMTP server that ${mode === 'refuse' ? 'refuses (550)' : 'hangs'}: the request is answered, the mail waits, and goes out when the server is back`, async (t) => {
    const { app, smtp, database, log } = await withAccount(t, mode)
    const asked = await askReset(app, 'dana')
    // Read before anything else can run (no await between the answer and this line): a request
    // that waited for the mail would come back after its attempt had given up on the server, and
    // the server would have seen that connection end. No clock, and no query (a slow one let the
    // background attempt time out first on a loaded machine).
    const endedAtAnswer = smtp.closed
    t.equal(asked.statusCode, 200, 'answered')
    if (mode === 'hang') t.equal(endedAtAnswer, 0, 'without waiting for the mail server: no attempt had ended when it answered')
    await until(t, 'a failed attempt is recorded, the mail still pending', async () => {
      const row = await delivery(database)
      return row !== undefined && row.attempts >= 2 && row.status === 'pending'
    })
    const row = await delivery(database)
    if (mode === 'hang') t.ok(smtp.closed >= 1, 'the server saw the attempts give up (what the check at the answer counts)')
    t.match(row?.last_error, mode === 'refuse' ? /550/ : /timeout|Greeting never received/i, 'the last error says what happened')
    t.notMatch(row?.last_error ?? '', /dana/, 'without the address\'s local part')
    t.equal(row?.sealed, true, 'the link waits, sealed')
    t.equal(smtp.received.length, 0, 'nothing delivered yet')

    smtp.mode = 'accept'
    const mail = await smtp.next(10_000)
    t.same(mail.to, ['dana.private@example.org'], 'delivered once the server is back')
    await until(t, 'the delivery is recorded and its sealed secret wiped', async () => {
      const done = await delivery(database)
      return done?.status === 'delivered' && !done.sealed
    })
    const set = await app.inject({ method: 'POST', url: pathOf(mail.link), headers: FORM, payload: form({ new_password: 'a brand new passphrase 42' }) })
    t.equal(set.statusCode, 200, 'and its link works')
    t.notOk(log.text().includes('dana.private'), 'the log never held the local part')
    t.match(log.text(), /"domain":"example.org"/, 'the log names the domain')
  })
}

t.test('no link secret in Postgres or Redis, none in the log; links ignore Host and forwarded headers', async (t) => {
  const { app, smtp, database, redisStore, redisPrefix, log } = await withAccount(t)
  const poisoned = await app.inject({
    method: 'POST',
    url: '/auth/reset',
    headers: { ...FORM, host: 'evil.example.net', 'x-forwarded-host': 'evil.example.net', 'x-forwarded-proto': 'http', forwarded: 'host=evil.example.net;proto=http' },
    payload: form({ identifier: 'dana' })
  })
  t.equal(poisoned.statusCode, 200)
  const mail = await smtp.next()
  t.ok(mail.link.startsWith(`${PUBLIC_URL}/auth/reset/`), 'the link is AUTH_PUBLIC_URL\'s')
  t.notMatch(mail.text + mail.html, /evil/, 'nothing of the poisoned headers reaches the mail')
  const secret = mail.link.slice(-43)

  // Every table, every row, as text.
  const { rows: tables } = await database.query<{ name: string }>("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'")
  let dumped = ''
  for (const { name } of tables) {
    const { rows } = await database.query<{ row: string }>(`SELECT t::text AS row FROM "${name}" t`)
    dumped += rows.map((row) => row.row).join('\n')
  }
  t.ok(dumped.includes('dana.private@example.org'), 'the scan reads the tables (the address is there)')
  t.notOk(dumped.includes(secret), 'Postgres holds no link secret')
  t.notOk(dumped.includes(Buffer.from(secret).toString('base64')), 'nor its base64')

  const redis = redisStore?.redis
  if (redis === undefined || redisPrefix === undefined) throw new Error('the real backends have Redis')
  // The service's keys put a routing bucket inside the prefix's hash tag: `{atstest-…<bucket>}…`.
  const pattern = `${redisPrefix.slice(0, redisPrefix.indexOf('}'))}*`
  let scanned = ''
  let cursor = '0'
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', '1000')
    cursor = next
    for (const key of keys) {
      const type = await redis.type(key)
      scanned += key
      if (type === 'string') scanned += await redis.get(key) ?? ''
      else if (type === 'hash') scanned += JSON.stringify(await redis.hgetall(key))
      else if (type === 'set') scanned += (await redis.smembers(key)).join(' ')
      else if (type === 'zset') scanned += (await redis.zrange(key, '0', '-1')).join(' ')
      else if (type === 'list') scanned += (await redis.lrange(key, '0', '-1')).join(' ')
    }
  } while (cursor !== '0')
  t.ok(scanned.length > 0, 'the scan reads Redis (the limits are there)')
  t.notOk(scanned.includes(secret), 'Redis holds no link secret')
  t.notOk(scanned.includes('dana'), 'nor the name or address asked for')

  await app.inject({ url: pathOf(mail.link) })
  await app.inject({ method: 'POST', url: pathOf(mail.link), headers: FORM, payload: form({ new_password: 'a brand new passphrase 42' }) })
  const lines = log.text()
  t.ok(lines.length > 0, 'the log was written')
  t.notOk(lines.includes(secret), 'the log holds no link secret')
  t.notOk(lines.includes('dana.private'), 'nor the address\'s local part')
})

t.test('an account with a second factor gives a code (or a recovery code) on the link\'s page', async (t) => {
  const { app, smtp } = await withAccount(t)
  const login = await app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username: 'dana', password: PASSWORD }) })
  const token = login.json<{ token: string }>().token
  const begun = await app.inject({ method: 'POST', url: '/auth/totp', headers: { authorization: `Bearer ${token}` }, payload: { current_password: PASSWORD } })
  const enrollment = begun.json<{ secret: string, otpauth_uri: string, recovery_codes: string[] }>()
  const { TOTP, URI } = await import('otpauth')
  const generator = URI.parse(enrollment.otpauth_uri)
  if (!(generator instanceof TOTP)) throw new Error('not a TOTP URI')
  const confirmed = await app.inject({ method: 'POST', url: '/auth/totp/confirm', headers: { authorization: `Bearer ${token}` }, payload: { code: generator.generate() } })
  t.equal(confirmed.statusCode, 200, 'the second factor is active')

  await askReset(app, 'dana')
  const mail = await smtp.next()
  const page = await app.inject({ url: pathOf(mail.link) })
  t.match(page.body, /autocomplete="one-time-code"/, 'the page asks for a code')
  const without = await app.inject({ method: 'POST', url: pathOf(mail.link), headers: FORM, payload: form({ new_password: 'a brand new passphrase 42' }) })
  t.equal(without.statusCode, 401, 'no code: refused')
  t.match(without.body, /Enter the code/)
  const wrong = await app.inject({ method: 'POST', url: pathOf(mail.link), headers: FORM, payload: form({ new_password: 'a brand new passphrase 42', otp: 'not-a-code' }) })
  t.equal(wrong.statusCode, 401, 'a wrong code: refused')
  const stillOld = await app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username: 'dana', password: PASSWORD }) })
  t.equal(stillOld.json<{ status: number }>().status, 702, 'the password did not change')
  const recovery = enrollment.recovery_codes[0] ?? ''
  const done = await app.inject({ method: 'POST', url: pathOf(mail.link), headers: FORM, payload: form({ new_password: 'a brand new passphrase 42', otp: recovery }) })
  t.equal(done.statusCode, 200, 'a recovery code does it')
  const after = await app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username: 'dana', password: 'a brand new passphrase 42' }) })
  t.equal(after.json<{ status: number }>().status, 702, 'the new password, and the second factor still asked at Login')
})

t.test('limits: per client address, per name or address asked for, per account', async (t) => {
  const { app, smtp, database } = await buildRecoveryApp(t, { preSignInRequestsPerIp: 4 })
  const accounts = fixtureAccounts(app)
  await accounts.add('erin', PASSWORD, false)
  await accounts.setEmail('erin', 'erin@example.org')

  for (let n = 0; n < 4; n++) t.equal((await askReset(app, `someone-${n}`, '203.0.113.9')).statusCode, 200)
  const limited = await askReset(app, 'someone-else', '203.0.113.9')
  t.equal(limited.statusCode, 429, 'one client address: 429 past its limit')
  t.match(limited.headers['retry-after'], /^\d+$/, 'with Retry-After')
  t.match(limited.headers['content-type'], /text\/html/, 'a page')
  t.match(limited.body, /Too many attempts/)

  // Five per name from anywhere; the account gets three mails an hour, however it is asked for.
  const answers: number[] = []
  for (let n = 0; n < 6; n++) answers.push((await askReset(app, n % 2 === 0 ? 'erin' : 'erin@example.org', `198.51.100.${100 + n}`)).statusCode)
  t.same(answers, [200, 200, 200, 200, 200, 200], 'each name or address under its own limit')
  for (let n = 0; n < 3; n++) answers.push((await askReset(app, 'erin', `198.51.100.${120 + n}`)).statusCode)
  t.same(answers.slice(6), [200, 200, 429], 'the name asked for a sixth time in the window: 429, from any address')
  const unknown = []
  for (let n = 0; n < 6; n++) unknown.push((await askReset(app, 'ghost', `198.51.100.${140 + n}`)).statusCode)
  t.same(unknown, [200, 200, 200, 200, 200, 429], 'a name no account has is limited alike')
  await app.recovery?.settled()
  await new Promise((resolve) => setTimeout(resolve, 300))
  const { rows } = await database.query<{ n: number }>('SELECT count(*)::int AS n FROM mail_deliveries')
  t.equal(rows[0]?.n, 3, 'three mails for the account in the window')
  t.ok(smtp.received.length <= 3)
})
