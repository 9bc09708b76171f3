import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app/app.js'
import { assembleBackends } from '../../src/app/backends.js'
import { createMemoryTokenStore, type MemoryTokenStore } from '../../src/core/stores/memory/token-store.js'
import { testConfig } from '../support/config.js'
import { freshPglite } from '../support/pglite.js'

/*
 * A Login that a revocation overtakes, the Login's side: a revocation that lands between the
 * password check and the token's write leaves the Login without a token, answered as the
 * account's state now dictates. The revocation is made to land there exactly: the token store runs it just
 * before the write.
 */

type Revocation = (app: FastifyInstance) => Promise<unknown>

async function appWithRevocationBeforeIssue (t: Test, revoke: Revocation): Promise<{ app: FastifyInstance, arm: () => void }> {
  const config = testConfig()
  const inner = createMemoryTokenStore({ denyTtlMs: 1000 })
  let app: FastifyInstance | undefined
  let armed = false
  const tokens: MemoryTokenStore = {
    ...inner,
    async issue (hash, record, ttlMs, epoch) {
      if (armed && app !== undefined) {
        armed = false
        await revoke(app)
      }
      return await inner.issue(hash, record, ttlMs, epoch)
    }
  }
  const backends = assembleBackends(config, { database: await freshPglite(), tokens })
  app = await buildApp(config, { backends, logger: false })
  t.teardown(async () => {
    await app?.close()
    await backends.close()
  })
  await app.accounts.add('ann', 'ann old password', false)
  return { app, arm: () => { armed = true } }
}

const login = async (app: FastifyInstance, password: string): Promise<{ status: number, retryAfter: unknown, body: unknown }> => {
  const response = await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'ann', password } })
  return { status: response.statusCode, retryAfter: response.headers['retry-after'], body: response.json() }
}

const cases: Array<[string, Revocation, number]> = [
  ['user disable', async (app) => await app.accounts.setDisabled('ann', true), 401],
  ['user passwd', async (app) => await app.accounts.setPassword('ann', 'ann new password'), 401],
  ['sessions revoke', async (app) => await app.accounts.revokeSessions('ann'), 503],
  // The caller's own password change ends every other token, a Login under way with the old password included.
  ['POST /auth/Password', async (app) => {
    const { token } = (await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'ann', password: 'ann old password' } })).json<{ token: string }>()
    const changed = await app.inject({
      method: 'POST',
      url: '/auth/Password',
      headers: { authorization: `Bearer ${token}` },
      payload: { current_password: 'ann old password', new_password: 'ann new password' }
    })
    if (changed.statusCode !== 200) throw new Error(`password change answered ${changed.statusCode} ${changed.body}`)
  }, 401]
]

for (const [name, revoke, status] of cases) {
  t.test(`a Login overtaken by \`${name}\` gets no token: ${status === 401 ? '701' : '503 with Retry-After'}`, async (t) => {
    const { app, arm } = await appWithRevocationBeforeIssue(t, revoke)
    t.equal((await login(app, 'ann old password')).status, 200, 'a Login with nothing in its way')
    arm()
    const overtaken = await login(app, 'ann old password')
    t.equal(overtaken.status, status)
    if (status === 401) t.same(overtaken.body, { status: 701, message: 'Login Failed' })
    else {
      t.same(overtaken.body, { status: 503, message: 'Service Unavailable' })
      t.equal(overtaken.retryAfter, '1')
      t.equal((await login(app, 'ann old password')).status, 200, 'sent again, it succeeds: it began after the revocation')
    }
    await app.backends.audit.flush()
    const events = await app.backends.audit.list({ username: 'ann' })
    t.ok(events.some((event) => event.event === 'login.refused' && event.outcome === 'revoked-during-login'), 'audited')
  })
}
