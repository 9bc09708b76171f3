import t, { type Test } from 'tap'
import { buildTestApp, type BackendKind, type TestApp } from '../support/app.js'
import { BODIES, badRequestBody, form, FORM, parseExpiration, shortenLife, sleep, unknownToken, type InjectOptions, type LoginSuccess } from './support.js'

/**
 * One scenario through all three routes on both backends: Postgres + Redis ('real')
 * and PGlite + the in-process store ('embedded'). Each run is checked on its own, and
 * the two transcripts (tokens and dates masked) must be identical.
 */

interface Step { step: string, status: number, body: string }

async function scenario (t: Test, kind: BackendKind, testApp: TestApp): Promise<Step[]> {
  const { app } = testApp
  await Promise.all([testApp.addUser('alice', 'pw a&b'), testApp.addUser('bob', 'pw-b'), testApp.addUser('fed', 'pw-f', true)])
  const transcript: Step[] = []
  const tokens = new Map<string, string>()
  const mask = (raw: string): string => {
    let text = raw
    if (raw.startsWith('{')) {
      // Fields beyond the contract's may differ between backends (database ids): keep their names only.
      const kept = new Set(['status', 'message', 'detail', 'token', 'AuthToken', 'expiration_date', 'username', 'federated'])
      const body = JSON.parse(raw) as Record<string, unknown>
      text = JSON.stringify(Object.fromEntries(Object.entries(body).map(([key, value]) => [key, kept.has(key) ? value : '<value>'])))
    }
    let masked = text.replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/g, '<date>')
    for (const [token, name] of tokens) masked = masked.replaceAll(token, `<${name}>`)
    return masked.replace(/2[A-Za-z0-9_-]{45}/g, '<new token>')
  }
  const call = async (step: string, options: InjectOptions) => {
    const res = await app.inject(options)
    transcript.push({ step, status: res.statusCode, body: mask(res.body) })
    return res
  }
  const name = (token: string, label: string): string => { tokens.set(token, label); return token }
  const loginForm = (username: string, password: string, extra: Partial<InjectOptions> = {}): InjectOptions =>
    ({ method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username, password }), ...extra })

  const before = Date.now()
  const first = (await call('login (form)', loginForm('alice', 'pw a&b'))).json<LoginSuccess>()
  const t1 = name(first.token, 'T1')
  t.ok(parseExpiration(first.expiration_date) - before > 43190_000, `${kind}: 12 h`)
  await call('login, wrong password', loginForm('alice', 'pw a&c'))
  await call('login, unknown user', loginForm('carol', 'pw a&b'))
  const legacy = await call('login (legacy path)', { method: 'POST', url: `/auth/Login/alice/${encodeURIComponent('pw a&b')}` })
  const t2 = name(legacy.json<LoginSuccess>().token, 'T2')
  const bobs = name((await call('login bob', loginForm('bob', 'pw-b'))).json<LoginSuccess>().token, 'B')
  const fed = (await call('login federated', loginForm('fed', 'pw-f'))).json<LoginSuccess>()
  t.ok(parseExpiration(fed.expiration_date) - before > 86390_000, `${kind}: federated 24 h`)

  await call('authenticate (path)', { method: 'GET', url: `/auth/Authenticate/${t1}` })
  await call('authenticate (query)', { method: 'GET', url: `/auth/Authenticate?token=${t1}` })
  await call('authenticate (cookie)', { method: 'GET', url: '/auth/Authenticate', cookies: { AuthToken1: t1 } })
  await call('authenticate (POST form)', { method: 'POST', url: '/auth/Authenticate', headers: FORM, payload: form({ token: t1 }) })
  await call('authenticate (padded)', { method: 'GET', url: `/auth/Authenticate/${t1}?jsonpFunction=cb` })
  await call('authenticate, unknown', { method: 'GET', url: `/auth/Authenticate/${unknownToken()}` })
  await call('authenticate, unknown (padded)', { method: 'GET', url: `/auth/Authenticate/${unknownToken()}?callback=cb` })
  await call('authenticate, bad format', { method: 'GET', url: `/auth/Authenticate/${t1}?format=xml` })
  await call('authenticate, bad padding name', { method: 'GET', url: `/auth/Authenticate/${t1}?callback=if` })

  await shortenLife(testApp, t1, 60_000)
  const refreshed = (await call('refresh T1 (cookie)', loginForm('alice', 'pw a&b', { cookies: { AuthToken1: t1 } }))).json<LoginSuccess>()
  t.equal(refreshed.token, t1, `${kind}: refresh returns the same token`)
  t.ok(parseExpiration(refreshed.expiration_date) - Date.now() > 43190_000, `${kind}: with its 12 h again`)
  await call('login alice presenting bob\'s token', loginForm('alice', 'pw a&b', { cookies: { AuthToken1: bobs } }))
  await call('bob\'s token is still active', { method: 'GET', url: `/auth/Authenticate/${bobs}` })

  await call('logout T1 (path)', { method: 'POST', url: `/auth/Logout/${t1}` })
  await call('authenticate T1 after logout', { method: 'GET', url: `/auth/Authenticate/${t1}` })
  await call('logout T1 again', { method: 'POST', url: `/auth/Logout/${t1}` })
  const revived = await call('refresh attempt with terminated T1', loginForm('alice', 'pw a&b', { cookies: { AuthToken1: t1 } }))
  t.not(revived.json<LoginSuccess>().token, t1, `${kind}: a terminated token is not revived`)
  await call('authenticate T1 after the refresh attempt', { method: 'GET', url: `/auth/Authenticate/${t1}` })
  await call('logout T2 (cookie, empty form)', { method: 'POST', url: '/auth/Logout', headers: FORM, payload: '', cookies: { AuthToken1: t2 } })

  const racer = (await app.inject(loginForm('alice', 'pw a&b'))).json<LoginSuccess>().token
  const race = await Promise.all(Array.from({ length: 20 }, async () => await app.inject({ method: 'POST', url: `/auth/Logout/${racer}` })))
  const winners = race.filter((res) => res.body === BODIES.success).length
  t.equal(winners, 1, `${kind}: one of 20 concurrent logouts wins`)
  transcript.push({ step: '20 concurrent logouts', status: 0, body: `${winners} won, ${race.filter((r) => r.body === BODIES.unauthorized).length} refused` })

  const expiring = (await app.inject(loginForm('bob', 'pw-b'))).json<LoginSuccess>().token
  name(expiring, 'E')
  await shortenLife(testApp, expiring, 1)
  await sleep(20)
  await call('authenticate expired', { method: 'GET', url: `/auth/Authenticate/${expiring}` })
  await call('logout expired', { method: 'POST', url: `/auth/Logout/${expiring}` })

  await app.accounts.setDisabled('bob', true)
  await call('bob\'s token after disabling bob', { method: 'GET', url: `/auth/Authenticate/${bobs}` })
  await call('disabled bob logs in', loginForm('bob', 'pw-b'))
  return transcript
}

t.test('Postgres + Redis and PGlite + in-process store answer alike', async (t) => {
  // One after the other: PGlite's start-up runs on this thread and would stall Postgres replies meanwhile.
  const embedded = await buildTestApp(t, 'embedded')
  const real = await buildTestApp(t, 'real')
  const [a, b] = await Promise.all([scenario(t, 'real', real), scenario(t, 'embedded', embedded)])
  t.same(b, a, 'identical transcripts')
  const expected: Record<string, [number, string]> = {
    'login, wrong password': [401, BODIES.loginFailed],
    'login, unknown user': [401, BODIES.loginFailed],
    'authenticate (padded)': [200, 'function cb() {return {"status":0,"message":"Success"};}'],
    'authenticate, unknown': [403, BODIES.unauthorized],
    'authenticate, unknown (padded)': [200, 'function cb() {return {"status":403,"message":"Unauthorized"};}'],
    'authenticate, bad format': [400, badRequestBody('format must be json')],
    'authenticate, bad padding name': [400, badRequestBody('padding function name in callback is a reserved word')],
    'logout T1 (path)': [200, BODIES.success],
    'authenticate T1 after logout': [403, BODIES.unauthorized],
    'logout T1 again': [403, BODIES.unauthorized],
    'authenticate T1 after the refresh attempt': [403, BODIES.unauthorized],
    'logout T2 (cookie, empty form)': [200, BODIES.success],
    '20 concurrent logouts': [0, '1 won, 19 refused'],
    'authenticate expired': [403, BODIES.unauthorized],
    'logout expired': [403, BODIES.unauthorized],
    'bob\'s token after disabling bob': [403, BODIES.unauthorized],
    'disabled bob logs in': [401, BODIES.loginFailed]
  }
  for (const [kind, transcript] of [['real', a], ['embedded', b]] as const) {
    for (const [step, [status, body]] of Object.entries(expected)) {
      const seen = transcript.find((s) => s.step === step)
      t.same(seen === undefined ? undefined : [seen.status, seen.body], [status, body], `${kind}: ${step}`)
    }
    for (const step of ['authenticate (path)', 'authenticate (query)', 'authenticate (cookie)', 'authenticate (POST form)', 'bob\'s token is still active']) {
      const seen = transcript.find((s) => s.step === step)
      t.equal(seen?.status, 200, `${kind}: ${step}: 200`)
      t.match(seen?.body ?? '', /^\{"status":0,"message":"Success"/, `${kind}: ${step}: Success`)
    }
  }
})
