import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { buildTestApp } from '../support/app.js'
import { authenticate, tokenFor } from './support.js'

/*
 * The per-account token cap through Login: with AUTH_MAX_TOKENS_PER_ACCOUNT=5, 8 Logins of one account 50 ms
 * apart must leave the 5 newest active, oldest first `00011111`: the cap ends
 * the oldest-issued tokens, never the token a Login has just returned. Before the fix the Redis
 * store left `10101110` (tokens of one second named the same expiry and tied).
 */

for (const kind of ['real', 'embedded'] as const) {
  t.test(`${kind === 'real' ? 'Redis' : 'in-process'} store: 8 Logins 50 ms apart at a cap of 5 leave 00011111`, async (t) => {
    const { app, addUser } = await buildTestApp(t, kind, { maxTokensPerAccount: 5 })
    await addUser('capped', 'pw')
    // Begun just past a second's start, so that as many as can share it (hashing takes its time on a busy machine).
    await sleep(1000 - (Date.now() % 1000) + 5)
    const began = Date.now()
    const tokens: string[] = []
    for (let i = 0; i < 8; i++) {
      if (i > 0) await sleep(50 - (Date.now() - began) % 50)
      const token = await tokenFor(t, app, 'capped', 'pw')
      tokens.push(token)
      t.equal((await authenticate(app, token)).statusCode, 200, `Login ${i + 1}: the token it returned is active`)
    }
    t.comment(`8 Logins in ${Date.now() - began} ms`)
    const pattern = (await Promise.all(tokens.map(async (token) => await authenticate(app, token)))).map((res) => res.statusCode === 200 ? '1' : '0').join('')
    t.equal(pattern, '00011111', 'active, oldest first')
  })
}
