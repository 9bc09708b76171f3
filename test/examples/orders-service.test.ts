import t from 'tap'
import { buildOrdersApp } from '../../examples/orders-service/src/app.js'
import { eventually, guardOptions, MODES, startTokenService, USER } from '../guard/support.js'

/*
 * The example service end to end: a real token service listening on a port, the
 * orders service guarded in each mode with a cache; log in through the service, use
 * the token as query parameter, cookie and bearer, log out, and see every way refused,
 * although each had just been answered from the cache.
 */

for (const mode of MODES) {
  t.test(`orders-service, ${mode} mode, with a cache`, async (t) => {
    const service = await startTokenService(t)
    const { options, verifications } = guardOptions(t, service, mode, { cache: { maxEntries: 1000, ttlMs: 60_000 } })
    const orders = await buildOrdersApp({ guard: options, logger: false })
    t.teardown(async () => { await orders.close() })
    await orders.ready()

    const login = await service.client.login(USER.username, USER.password)
    if (!login.ok) throw new Error(`login failed: ${JSON.stringify(login.error)}`)
    const { token } = login
    const ways = {
      'query parameter': { query: { token } },
      cookie: { headers: { cookie: `AuthToken1=${token}` } },
      bearer: { headers: { authorization: `Bearer ${token}` } }
    }
    const get = async (way: keyof typeof ways) => await orders.inject({ method: 'GET', url: '/orders', ...ways[way] })

    t.equal((await orders.inject({ method: 'GET', url: '/health' })).statusCode, 200, '/health is open')
    const anonymous = await orders.inject({ method: 'GET', url: '/orders' })
    t.equal(anonymous.statusCode, 401)
    t.equal(anonymous.headers['www-authenticate'], 'Bearer')

    const created = await orders.inject({ method: 'POST', url: '/orders', headers: { authorization: `Bearer ${token}` }, payload: { item: 'paper', quantity: 3 } })
    t.equal(created.statusCode, 201)
    t.equal((await orders.inject({ method: 'POST', url: '/orders', payload: { item: 'paper', quantity: 0 } })).statusCode, 401,
      'no token and a bad body: 401, the body is not even looked at')

    for (const way of Object.keys(ways) as Array<keyof typeof ways>) {
      const res = await get(way)
      t.equal(res.statusCode, 200, `${way}: 200`)
      t.match(res.json(), { account: { username: USER.username }, orders: [{ item: 'paper', quantity: 3 }] }, `${way}: the caller's orders`)
    }
    const session = (await orders.inject({ method: 'GET', url: '/orders/session', ...ways.bearer })).json()
    t.same(session, { username: USER.username, federated: false, tokenExpiresAt: login.expiresAt.toISOString() })

    // Warm: answered without asking the token service (its feed is live).
    await eventually(async () => {
      const before = verifications.count()
      await get('bearer')
      return verifications.count() === before
    }, 5000, 'a cache hit')
    const before = verifications.count()
    for (const way of Object.keys(ways) as Array<keyof typeof ways>) t.equal((await get(way)).statusCode, 200)
    t.equal(verifications.count(), before, 'all three answered from the cache')

    const logout = await service.client.logout(token)
    t.ok(logout.ok, 'logged out through the token service')
    const started = performance.now()
    await eventually(async () => (await get('bearer')).statusCode === 403, 1000, 'refused within 1 s')
    t.comment(`${mode}: refused ${(performance.now() - started).toFixed(1)} ms after the Logout answered`)
    for (const way of Object.keys(ways) as Array<keyof typeof ways>) {
      const res = await get(way)
      t.equal(res.statusCode, 403, `${way}: refused after Logout`)
      t.equal(res.body, JSON.stringify({ status: 403, message: 'Unauthorized' }))
    }
  })
}
