import { randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import { waitFor } from '../../support/processes.js'
import { startSmtp, testMail, type SmtpMode, type TestSmtp } from '../recovery/support.js'
import { events, getPage, postForm, setUp, type ConsoleSetup } from './support.js'

/*
 * An account's email in the console (issue 47): shown and set through the admin API's operation
 * (core/accounts.ts setEmail), a bad address the page again with why; invitations from the create
 * form while mail is on, through a real SMTP server; and failed mail beside failed webhooks,
 * retried through the outbox's own retry, audited with the acting admin.
 */

const ACTED = { actor: 'root', credential: 'console' }

/** The console with mail through a test SMTP server; a failed attempt waits a minute (no retry of its own during a test). */
async function withMail (t: Test, mode: SmtpMode = 'accept'): Promise<ConsoleSetup & { smtp: TestSmtp }> {
  const smtp = await startSmtp(t, mode)
  const setup = await setUp(t, 'real', { mail: testMail(smtp.url, { backoffMs: 60_000 }), totpKey: randomBytes(32) })
  return { ...setup, smtp }
}

t.test('the account page shows the email; set, change and clear it, each audited with the actor', async (t) => {
  const { app, admin } = await setUp(t)
  const before = await getPage(app, '/console/accounts/alice', admin)
  t.match(before.body, /id="fact-email"><span class="meta">none<\/span>/)
  t.match(before.body, /<form method="post" action="\/console\/accounts\/alice\/email"/)

  const set = await postForm(app, '/console/accounts/alice/email', admin, { email: ' Alice@Example.ORG ' })
  t.equal(set.statusCode, 303)
  t.equal(set.headers.location, '/console/accounts/alice?done=email-set')
  t.equal((await app.accounts.show('alice')).email, 'Alice@example.org', 'kept as the operation keeps it (the domain lower-cased)')
  const shown = await getPage(app, '/console/accounts/alice?done=email-set', admin)
  t.match(shown.body, /id="fact-email">Alice@example.org</)
  t.match(shown.body, /The email address was saved\./)

  const cleared = await postForm(app, '/console/accounts/alice/email', admin, { email: '' })
  t.equal(cleared.headers.location, '/console/accounts/alice?done=email-removed')
  t.equal((await app.accounts.show('alice')).email, null)
  t.match(await events(app, 'user.email'), [{ outcome: 'set', ...ACTED }, { outcome: 'removed', ...ACTED }])

  t.equal((await postForm(app, '/console/accounts/nobody/email', admin, { email: 'x@example.org' })).statusCode, 404)
  t.equal((await postForm(app, '/console/accounts/alice/email', admin, { email: 'x@example.org' }, { 'sec-fetch-site': 'cross-site' })).statusCode, 403)
  t.equal((await app.accounts.show('alice')).email, null, 'a cross-site post changes nothing')
})

t.test('a bad address: the account page again with the operation\'s reason, nothing changed', async (t) => {
  const { app, admin } = await setUp(t)
  await app.accounts.setEmail('alice', 'alice@example.org')
  const bad = await postForm(app, '/console/accounts/alice/email', admin, { email: 'not an address' })
  t.equal(bad.statusCode, 400)
  t.match(bad.headers['content-type'], /text\/html/, 'a page, not JSON')
  t.match(bad.body, /class="notice error"[^>]*>Not done: email is not a valid address/)
  t.match(bad.body, /id="email"[^>]*value="not an address"/, 'the field keeps what was typed')
  t.match(bad.body, /id="fact-email">alice@example.org</)
  t.equal((await app.accounts.show('alice')).email, 'alice@example.org')
  t.same((await events(app, 'user.email')).filter((event) => event.actor !== undefined), [], 'no event of the console: nothing changed')
})

t.test('mail off: an account is created with an email; no invitation is offered, and one asked for anyway is refused', async (t) => {
  const { app, admin } = await setUp(t)
  const form = await getPage(app, '/console/accounts', admin)
  t.match(form.body, /id="new-email"/)
  t.notMatch(form.body, /name="invite"/, 'no invitation checkbox while mail is off')

  const made = await postForm(app, '/console/accounts', admin, { username: 'bob', kind: 'person', password: 'a long enough passphrase 1', email: 'bob@example.org' })
  t.equal(made.headers.location, '/console/accounts/bob?done=created')
  t.equal((await app.accounts.show('bob')).email, 'bob@example.org')
  t.match(await events(app, 'user.email', ['bob']), [{ outcome: 'set', ...ACTED }])

  const badAddress = await postForm(app, '/console/accounts', admin, { username: 'carol', kind: 'person', password: 'a long enough passphrase 1', email: 'carol@' })
  t.equal(badAddress.statusCode, 400)
  t.match(badAddress.body, /Not done: email is not a valid address/)
  t.match(badAddress.body, /id="new-username"[^>]*value="carol"/, 'the form keeps what was typed')
  t.equal((await postForm(app, '/console/accounts/carol/email', admin, { email: 'c@example.org' })).statusCode, 404, 'a bad address makes no account')

  const invited = await postForm(app, '/console/accounts', admin, { username: 'dave', kind: 'person', email: 'dave@example.org', invite: 'yes' })
  t.equal(invited.statusCode, 400)
  t.match(invited.body, /Not done: mail is off/)
})

t.test('mail off: the deliveries page says so', async (t) => {
  const { app, admin } = await setUp(t)
  const page = await getPage(app, '/console/webhooks', admin)
  t.match(page.body, /id="webhooks-off"/)
  t.match(page.body, /id="mail-off"/)
  t.match(page.body, /<a href="\/console\/webhooks" aria-current="page">Deliveries<\/a>/)
})

t.test('mail on: create with an invitation, the mail through the SMTP server, audited with the actor', async (t) => {
  const { app, admin, smtp } = await withMail(t)
  const form = await getPage(app, '/console/accounts', admin)
  t.match(form.body, /name="invite" value="yes"/, 'the invitation is offered')
  t.match(form.body, /Send an invitation to set the first password/)

  const withPassword = await postForm(app, '/console/accounts', admin, { username: 'bob', kind: 'person', password: 'a long enough passphrase 1', email: 'bob@example.org', invite: 'yes' })
  t.equal(withPassword.statusCode, 400, 'an invitation sets no password')
  const noAddress = await postForm(app, '/console/accounts', admin, { username: 'bob', kind: 'person', invite: 'yes' })
  t.equal(noAddress.statusCode, 400)
  t.match(noAddress.body, /Not done: email is required/)

  const invited = await postForm(app, '/console/accounts', admin, { username: 'bob', kind: 'person', email: 'bob@example.org', invite: 'yes' })
  t.equal(invited.statusCode, 303)
  t.equal(invited.headers.location, '/console/accounts/bob?done=invited')
  const mail = await smtp.next(10_000)
  t.same(mail.to, ['bob@example.org'])
  t.match(mail.link, /\/auth\/reset\//, 'a link to set the first password')
  const bob = await app.accounts.show('bob')
  t.equal(bob.email, 'bob@example.org')
  t.match(await events(app, 'user.add', ['bob']), [{ outcome: 'created', ...ACTED }])
  t.match(await events(app, 'user.invite', ['bob']), [{ outcome: 'invited', ...ACTED }])
  t.match((await getPage(app, '/console/accounts/bob?done=invited', admin)).body, /an invitation to set its first password is on its way/)
})

t.test('mail on: failed and retrying mail listed beside the webhooks; a pending one retried, audited with the actor', async (t) => {
  const { app, admin, smtp } = await withMail(t, 'refuse')
  const outbox = app.mailOutbox
  if (outbox === undefined) throw new Error('mail is on')
  await postForm(app, '/console/accounts', admin, { username: 'bob', kind: 'person', email: 'bob.private@example.org', invite: 'yes' })
  await waitFor('a refused attempt', async () => (await outbox.list({ status: 'pending', limit: 10 })).some((one) => one.lastError !== null), { timeoutMs: 10_000 })
  const [pending] = await outbox.list({ status: 'pending', limit: 10 })
  const id = pending?.id ?? ''

  const page = await getPage(app, '/console/webhooks', admin)
  t.equal(page.statusCode, 200)
  t.match(page.body, /<title>Failed deliveries · Admin console<\/title>/)
  t.match(page.body, /<table id="mail-deliveries">/)
  t.match(page.body, `action="/console/mail/${id}/retry"`, 'a retry for the pending mail')
  t.match(page.body, /550/, 'its last error')
  t.match(page.body, /bob\.private@example\.org/, 'the address, as the admin API\'s view shows it')
  t.notMatch(page.body, /\/auth\/reset\//, 'never a link')

  smtp.mode = 'accept'
  const retried = await postForm(app, `/console/mail/${id}/retry`, admin)
  t.equal(retried.statusCode, 303)
  t.equal(retried.headers.location, '/console/webhooks?done=mail-retried')
  const mail = await smtp.next(10_000)
  t.same(mail.to, ['bob.private@example.org'], 'sent at once, not after the backoff')
  await app.backends.audit.flush()
  t.match(await app.backends.audit.list({ event: 'mail.retry' }), [{ outcome: `retried:${id}`, ...ACTED }])
  t.match((await getPage(app, '/console/webhooks?done=mail-retried', admin)).body, /The mail is sent again now\./)

  // A new invitation voids the first link: its mail, were it unsent, would be withdrawn (failed, nothing to retry).
  smtp.mode = 'refuse'
  await postForm(app, '/console/accounts', admin, { username: 'bob', kind: 'person', email: 'bob.private@example.org', invite: 'yes' })
  await waitFor('the second invitation refused', async () => (await outbox.list({ status: 'pending', limit: 10 })).some((one) => one.lastError !== null), { timeoutMs: 10_000 })
  await postForm(app, '/console/accounts', admin, { username: 'bob', kind: 'person', email: 'bob.private@example.org', invite: 'yes' })
  const [withdrawn] = await outbox.list({ status: 'failed', limit: 10 })
  t.ok(withdrawn !== undefined, 'the superseded mail failed')
  const listed = await getPage(app, '/console/webhooks', admin)
  t.match(listed.body, /superseded by a newer link/)
  t.notMatch(listed.body, `action="/console/mail/${withdrawn?.id ?? ''}/retry"`, 'no retry for a mail whose link is gone')
  t.equal((await postForm(app, `/console/mail/${withdrawn?.id ?? ''}/retry`, admin)).statusCode, 404)
  t.equal((await postForm(app, '/console/mail/999999/retry', admin)).statusCode, 404)
  t.equal((await postForm(app, `/console/mail/${id}/retry`, admin, {}, { 'sec-fetch-site': 'cross-site' })).statusCode, 403)
})
