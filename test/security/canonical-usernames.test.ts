import t from 'tap'
import { buildTestApp } from '../support/app.js'
import { rejection } from '../support/rejection.js'
import { StatusError } from '../../src/errors/status.js'

/*
 * Canonical usernames: what a local account's name looked like to the service. Each variant below
 * was an account of its own (`user add` took it) and logged in as its own name.
 */

const PASSWORD = 'correct horse battery staple'
const VARIANTS = ['Alice', 'ALICE', 'ａｌｉｃｅ', 'alice ', ' alice', 'alice\u200b', 'al\u00adice', 'alice\u202e', 'alice\t']

t.test('user add: a variant of a taken name is the same name (409) or refused (400)', async (t) => {
  const { app } = await buildTestApp(t, 'embedded')
  await app.accounts.add('alice', PASSWORD, false)
  for (const variant of VARIANTS) {
    const error = await rejection(app.accounts.add(variant, PASSWORD, false))
    t.ok(error instanceof StatusError && (error.status === 409 || error.status === 400), JSON.stringify(variant))
  }
  t.same((await app.accounts.list()).map((account) => account.username), ['alice'], 'one account')
  t.equal((await app.accounts.add('Bob', PASSWORD, false)).username, 'bob', 'stored in canonical form')
})

t.test('Login: every width and case of the name is the one account; the rest is a 400', async (t) => {
  const { app } = await buildTestApp(t, 'embedded')
  await app.accounts.add('Alice', PASSWORD, false)
  const login = async (username: string) => await app.inject({ method: 'POST', url: '/auth/Login', payload: { username, password: PASSWORD } })
  for (const variant of ['alice', 'Alice', 'ALICE', 'ａｌｉｃｅ']) {
    const answer = await login(variant)
    t.equal(answer.statusCode, 200, JSON.stringify(variant))
    const token = answer.json<{ token: string }>().token
    const who = await app.inject({ method: 'GET', url: `/auth/Authenticate/${token}?format=json` })
    t.equal(who.json<{ username: string }>().username, 'alice', 'other services are told the canonical name')
  }
  for (const variant of ['alice ', ' alice', 'alice\u200b', 'al\u00adice', 'alice\u202e', 'alice\t']) {
    const answer = await login(variant)
    t.equal(answer.statusCode, 400, JSON.stringify(variant))
    t.match(answer.json(), { detail: /^username holds a space, control, invisible or unassigned character$/ })
  }
  // The legacy path and the query string go through the same rule.
  t.equal((await app.inject({ method: 'POST', url: `/auth/Login/${encodeURIComponent('ＡＬＩＣＥ')}/${encodeURIComponent(PASSWORD)}` })).statusCode, 200)
  t.equal((await app.inject({ method: 'POST', url: `/auth/Login?username=ALICE&password=${encodeURIComponent(PASSWORD)}` })).statusCode, 200)
})

t.test('a disabled account stays disabled, and a locked one locked, under every variant', async (t) => {
  const { app } = await buildTestApp(t, 'embedded', { maxFailedLogins: 5 })
  await app.accounts.add('carol', PASSWORD, false)
  await app.accounts.add('dave', PASSWORD, false)
  await app.accounts.setDisabled('CAROL', true)
  const login = async (username: string, password = PASSWORD) => await app.inject({ method: 'POST', url: '/auth/Login', payload: { username, password } })
  for (const variant of ['carol', 'Carol', 'CAROL', 'ｃａｒｏｌ']) t.equal((await login(variant)).statusCode, 401, `disabled: ${variant}`)
  for (const variant of ['carol ', 'carol\t']) t.equal((await login(variant)).statusCode, 400, `refused: ${JSON.stringify(variant)}`)
  // Failures spread over variants count against one account.
  for (const variant of ['dave', 'Dave', 'DAVE', 'ｄａｖｅ', 'dAvE']) t.equal((await login(variant, 'wrong')).statusCode, 401)
  for (const variant of ['dave', 'Dave', 'ｄａｖｅ']) t.equal((await login(variant)).statusCode, 429, `locked: ${variant}`)
})
