import t from 'tap'
import { fixtureAccounts, buildTestApp } from '../support/app.js'
import { askReset, authenticates, buildRecoveryApp, FORM, form, loginToken, pathOf, PUBLIC_URL } from './support.js'

/**
 * A forgotten password, as a person meets it: the sign-in page's link, the form, the mail (from a
 * real SMTP server), the link's page, the new password; the old sessions gone, the API keys kept.
 */

const OLD = 'correct horse battery'
const NEW = 'a brand new passphrase 42'

t.test('forgot → mail → new password: old sessions refused, API key kept, one use only', async (t) => {
  const { app, smtp, log } = await buildRecoveryApp(t)
  const accounts = fixtureAccounts(app)
  const alice = await accounts.add('alice', OLD, false)
  t.equal((await accounts.setEmail('alice', 'alice.smith@example.org')).email, 'alice.smith@example.org', 'the address is on the account')
  const token = await loginToken(app, 'alice', OLD)
  const key = await app.apiKeys.create(alice, 'ci', undefined, {})

  const signIn = await app.inject({ url: '/auth/signin' })
  t.match(signIn.body, /<a href="\/auth\/reset" id="forgot-password">Forgot your password\?<\/a>/, 'the sign-in page links to the reset form')

  const formPage = await app.inject({ url: '/auth/reset' })
  t.equal(formPage.statusCode, 200)
  t.match(formPage.headers['content-security-policy'], /default-src 'none'/, 'the sign-in pages\' strict CSP')
  t.equal(formPage.headers['x-frame-options'], 'DENY')
  t.match(formPage.body, /<label for="identifier">Username or email<\/label>/, 'a labelled field')
  t.match(formPage.body, /autocomplete="username"/)
  t.notMatch(formPage.body, /<script/, 'no script')

  const asked = await askReset(app, 'alice')
  t.equal(asked.statusCode, 200)
  t.match(asked.body, /Check your email/)
  t.match(asked.body, /works for 30 minutes/)

  const mail = await smtp.next()
  t.same(mail.to, ['alice.smith@example.org'], 'to the account\'s address')
  t.match(mail.from, 'accounts@example.org', 'from AUTH_MAIL_FROM')
  t.match(mail.subject, /Reset your .* password/)
  t.ok(mail.link.startsWith(`${PUBLIC_URL}/auth/reset/`), 'the link is built from AUTH_PUBLIC_URL')
  t.match(mail.text, 'alice', 'the text body names the account')
  t.ok(mail.html.includes(`href="${mail.link}"`), 'the HTML body carries the same link')
  t.match(mail.text, /works for 30 minutes, once/)

  const linkPage = await app.inject({ url: pathOf(mail.link) })
  t.equal(linkPage.statusCode, 200)
  t.equal(linkPage.headers['cache-control'], 'no-store')
  t.match(linkPage.headers['content-security-policy'], /frame-ancestors 'none'/)
  t.match(linkPage.body, /<label for="new_password">New password<\/label>/)
  t.match(linkPage.body, /autocomplete="new-password"/)
  t.notMatch(linkPage.body, /one-time-code/, 'no code asked of an account without a second factor')

  const weak = await app.inject({ method: 'POST', url: pathOf(mail.link), headers: FORM, payload: form({ new_password: 'short' }) })
  t.equal(weak.statusCode, 400, 'the password policy applies')
  t.match(weak.body, /new_password/, 'and says why')
  t.ok(await authenticates(app, token), 'a refused password changes nothing')

  const crossSite = await app.inject({ method: 'POST', url: pathOf(mail.link), headers: { ...FORM, 'sec-fetch-site': 'cross-site' }, payload: form({ new_password: NEW }) })
  t.equal(crossSite.statusCode, 403, 'a cross-site post is refused')

  const done = await app.inject({ method: 'POST', url: pathOf(mail.link), headers: FORM, payload: form({ new_password: NEW }) })
  t.equal(done.statusCode, 200)
  t.match(done.body, /Password set/)

  t.notOk(await authenticates(app, token), 'the old session is refused by Authenticate')
  t.ok(await authenticates(app, key.secret), 'the API key still works')
  t.ok(await loginToken(app, 'alice', NEW), 'the new password logs in')
  const old = await app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username: 'alice', password: OLD }) })
  t.equal(old.statusCode, 401, 'the old one does not')

  const again = await app.inject({ method: 'POST', url: pathOf(mail.link), headers: FORM, payload: form({ new_password: 'yet another passphrase 7' }) })
  t.equal(again.statusCode, 410, 'a used link shows the error page')
  t.match(again.body, /This link does not work/)
  t.ok(await loginToken(app, 'alice', NEW), 'and changes nothing')
  t.equal((await app.inject({ url: pathOf(mail.link) })).statusCode, 410)

  await app.backends.audit.flush()
  const events = await app.backends.audit.list({ event: 'password.reset' })
  t.equal(events.length, 1, 'one password.reset event')
  t.match(events[0], { username: 'alice', outcome: 'tokens-ended-1' })

  const lines = log.text()
  t.match(lines, /"url":"\/auth\/reset\/:secret"/, 'the access log names the link route by its template')
  t.notOk(lines.includes(mail.link.slice(-43)), 'the log holds no link secret')
  t.notOk(lines.includes('alice.smith'), 'nor the address\'s local part')
})

t.test('a newer link voids the older; an expired link changes nothing', async (t) => {
  const { app, smtp, database } = await buildRecoveryApp(t)
  const accounts = fixtureAccounts(app)
  await accounts.add('bob', OLD, false)
  await accounts.setEmail('bob', 'bob@example.org')
  await askReset(app, 'bob')
  const first = await smtp.next()
  await askReset(app, 'bob@example.org')
  const second = await smtp.next()
  t.not(first.link, second.link, 'two links')

  const stale = await app.inject({ method: 'POST', url: pathOf(first.link), headers: FORM, payload: form({ new_password: NEW }) })
  t.equal(stale.statusCode, 410, 'the superseded link shows the error page')
  t.ok(await loginToken(app, 'bob', OLD), 'nothing changed')

  await database.query("UPDATE reset_links SET expires_at = now() - interval '1 second'")
  const expired = await app.inject({ method: 'POST', url: pathOf(second.link), headers: FORM, payload: form({ new_password: NEW }) })
  t.equal(expired.statusCode, 410, 'an expired link shows the error page')
  t.ok(await loginToken(app, 'bob', OLD), 'nothing changed')

  const garbage = await app.inject({ url: '/auth/reset/not-a-secret' })
  t.equal(garbage.statusCode, 410, 'a made-up link is the same error page')
})

t.test('a link mailed to an address the account no longer has opens nothing', async (t) => {
  const { app, smtp } = await buildRecoveryApp(t)
  const accounts = fixtureAccounts(app)
  await accounts.add('ivy', OLD, false)
  await accounts.setEmail('ivy', 'ivy@example.org')
  await askReset(app, 'ivy')
  const mail = await smtp.next()
  // The service's own account admin (the admin API's and the command line's), which tells recovery.
  await app.accounts.setEmail('ivy', 'ivy@example.org')
  t.equal((await app.inject({ url: pathOf(mail.link) })).statusCode, 200, 'the same address again changes nothing')
  await app.accounts.setEmail('ivy', 'ivy.new@example.org')
  t.equal((await app.inject({ url: pathOf(mail.link) })).statusCode, 410, 'a new address voids the link')
  const set = await app.inject({ method: 'POST', url: pathOf(mail.link), headers: FORM, payload: form({ new_password: NEW }) })
  t.equal(set.statusCode, 410)
  t.ok(await loginToken(app, 'ivy', OLD), 'nothing changed')
})

t.test('a link mailed before the account\'s tokens were ended (a new password, sign-out everywhere, disabling) opens nothing', async (t) => {
  const { app, smtp } = await buildRecoveryApp(t)
  const accounts = fixtureAccounts(app)
  const changes: Array<[string, (username: string) => Promise<unknown>]> = [
    ['a password set by an administrator', async (username) => await app.accounts.setPassword(username, 'an administrator\'s choice')],
    ['every session ended', async (username) => await app.accounts.revokeSessions(username)],
    ['disabled and enabled again', async (username) => { await app.accounts.setDisabled(username, true); await app.accounts.setDisabled(username, false) }]
  ]
  for (const [index, [what, change]] of changes.entries()) {
    const username = `kim${index}`
    await accounts.add(username, OLD, false)
    await accounts.setEmail(username, `${username}@example.org`)
    await askReset(app, username)
    const mail = await smtp.next()
    t.equal((await app.inject({ url: pathOf(mail.link) })).statusCode, 200, `${what}: the link works before`)
    await change(username)
    t.equal((await app.inject({ url: pathOf(mail.link) })).statusCode, 410, `${what}: the link shows the error page after`)
    const set = await app.inject({ method: 'POST', url: pathOf(mail.link), headers: FORM, payload: form({ new_password: NEW }) })
    t.equal(set.statusCode, 410, `${what}: and sets nothing`)
    const login = await app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username, password: NEW }) })
    t.equal(login.statusCode, 401, `${what}: the link's password does not log in`)
  }
})

t.test('no mail for an unknown name, a federated, disabled or service account, or one without an address; the answer is the same', async (t) => {
  const { app, smtp, database } = await buildRecoveryApp(t)
  const accounts = fixtureAccounts(app)
  await accounts.add('fed', undefined as unknown as string, true)
  await accounts.setEmail('fed', 'fed@example.org')
  await accounts.add('off', OLD, false)
  await accounts.setEmail('off', 'off@example.org')
  await accounts.setDisabled('off', true)
  await accounts.add('svc', undefined as unknown as string, false, 'service')
  await accounts.setEmail('svc', 'svc@example.org')
  await accounts.add('bare', OLD, false)
  await accounts.add('carol', OLD, false)
  await accounts.setEmail('carol', 'carol@example.org')

  const answers = []
  for (const identifier of ['carol', 'nobody', 'nobody@example.org', 'fed', 'fed@example.org', 'off', 'svc', 'bare', 'CAROL@EXAMPLE.ORG']) {
    const res = await askReset(app, identifier)
    answers.push({ status: res.statusCode, body: res.body, type: res.headers['content-type'], csp: res.headers['content-security-policy'] })
  }
  for (const answer of answers.slice(1)) t.same(answer, answers[0], 'the same answer whether or not an account matched')
  await app.recovery?.settled()
  const mails = [await smtp.next(), await smtp.next()]
  t.same(mails.map((mail) => mail.to[0]).sort(), ['carol@example.org', 'carol@example.org'], 'only carol gets mail (by name, and by address in any case)')
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal(smtp.received.length, 2, 'nobody else')
  const { rows } = await database.query<{ n: number }>('SELECT count(*)::int AS n FROM mail_deliveries')
  t.equal(rows[0]?.n, 2, 'nothing else queued')
})

t.test('mail off: /auth/reset is 404 and the sign-in page offers no reset', async (t) => {
  const { app } = await buildTestApp(t, 'embedded')
  t.equal((await app.inject({ url: '/auth/reset' })).statusCode, 404)
  t.equal((await app.inject({ method: 'POST', url: '/auth/reset', headers: FORM, payload: form({ identifier: 'x' }) })).statusCode, 404)
  t.notMatch((await app.inject({ url: '/auth/signin' })).body, /Forgot your password/)
})
