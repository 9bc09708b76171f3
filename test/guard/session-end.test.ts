import t from 'tap'
import { buildGuardedApp, FEED_NOT_TTL_MS, guardOptions, MODES, startTokenService, untilRefused, warm, type RunningService } from './support.js'

/*
 * A session ended by id (DELETE /auth/sessions/{id}) reaches a guard's cache as fast
 * as a Logout does, in both guard modes: both are the token store's one terminate (deny set
 * and revocation feed in one step). Measured side by side, over HTTP, each from the moment the
 * request is sent to the guard's first refusal.
 */

const ROUNDS = 5

async function sessionIdOf (service: RunningService, caller: string, token: string): Promise<string> {
  const answer = await fetch(`${service.baseUrl}/auth/sessions`, { headers: { authorization: `Bearer ${caller}` } })
  const { sessions } = await answer.json() as { sessions: Array<{ id: string, current: boolean }> }
  const own = await fetch(`${service.baseUrl}/auth/sessions`, { headers: { authorization: `Bearer ${token}` } })
  const { sessions: theirs } = await own.json() as { sessions: Array<{ id: string, current: boolean }> }
  const id = theirs.find((s) => s.current)?.id
  if (id === undefined || !sessions.some((s) => s.id === id)) throw new Error('the session is not listed')
  return id
}

const summary = (delays: number[]): string => `${delays.map((d) => d.toFixed(1)).join(', ')} ms (max ${Math.max(...delays).toFixed(1)})`

for (const mode of MODES) {
  t.test(`${mode} mode: a session ended by id is refused by the guard as fast as a Logout`, async (t) => {
    const service = await startTokenService(t)
    const { options, verifications } = guardOptions(t, service, mode, { cache: { maxEntries: 100, ttlMs: 60_000 } })
    const guarded = await buildGuardedApp(t, options)
    const caller = await service.login()
    const byLogout: number[] = []
    const byId: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const loggedOut = await service.login()
      await warm(guarded, verifications, loggedOut)
      let started = performance.now()
      await service.logout(loggedOut)
      byLogout.push(await untilRefused(guarded, loggedOut, started))

      const ended = await service.login()
      const id = await sessionIdOf(service, caller, ended)
      await warm(guarded, verifications, ended)
      started = performance.now()
      const answer = await fetch(`${service.baseUrl}/auth/sessions/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${caller}` } })
      t.equal(answer.status, 200, 'ended by id')
      byId.push(await untilRefused(guarded, ended, started))
    }
    t.comment(`${mode}: Logout to refusal of a cached token: ${summary(byLogout)}`)
    t.comment(`${mode}: DELETE /auth/sessions/{id} to refusal of a cached token: ${summary(byId)}`)
    t.ok(Math.max(...byId) < FEED_NOT_TTL_MS, 'every session ended by id refused by the feed, not by the cache\'s expiry')
    t.ok(Math.max(...byLogout) < FEED_NOT_TTL_MS, 'every Logout too')
    t.equal(await guarded.status(caller), 200, 'the caller\'s own token still passes')
  })

  t.test(`${mode} mode: ending the other sessions and a password change evict every other cached token`, async (t) => {
    const service = await startTokenService(t)
    const { options, verifications } = guardOptions(t, service, mode, { cache: { maxEntries: 100, ttlMs: 60_000 } })
    const guarded = await buildGuardedApp(t, options)
    const caller = await service.login()
    await warm(guarded, verifications, caller)
    for (const [what, end] of [
      ['DELETE /auth/sessions', async () => await fetch(`${service.baseUrl}/auth/sessions`, { method: 'DELETE', headers: { authorization: `Bearer ${caller}` } })],
      ['POST /auth/Password', async () => await fetch(`${service.baseUrl}/auth/Password`, {
        method: 'POST',
        headers: { authorization: `Bearer ${caller}`, 'content-type': 'application/json' },
        body: JSON.stringify({ current_password: 'correct horse battery staple', new_password: 'correct horse battery staple' })
      })]
    ] as const) {
      const others = [await service.login(), await service.login()]
      for (const token of others) await warm(guarded, verifications, token)
      // From the answer, not the request: a password change hashes twice (the current password
      // checked, the new one hashed) before it revokes anything, and on a loaded machine that
      // alone took over a second. What is bounded is how long a guard trusts a token after its
      // revocation was answered.
      const answer = await end()
      const started = performance.now()
      t.equal(answer.status, 200, `${what}: 200`)
      const delays: number[] = []
      for (const token of others) delays.push(await untilRefused(guarded, token, started))
      t.comment(`${mode}: ${what} to refusal of 2 cached tokens: ${summary(delays)}`)
      t.ok(Math.max(...delays) < FEED_NOT_TTL_MS, `${what}: by the feed, not by the cache's expiry`)
      t.equal(await guarded.status(caller), 200, `${what}: the caller's token still passes`)
    }
  })
}
