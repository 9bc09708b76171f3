import t, { type Test } from 'tap'
import { PassThrough } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import type * as oidc from 'openid-client'
import { buildApp } from '../../src/app/app.js'
import { assembleBackends, idleTimeoutMs } from '../../src/app/backends.js'
import { createRedisTokenStore } from '../../src/core/stores/redis/token-store.js'
import { TEST_REDIS_COMMAND_TIMEOUT_MS, requireRedis } from '../../support/redis.js'
import type { BackendKind } from '../support/app.js'
import { authenticate, browser, codeFlow, discover, PASSWORD, REDIRECT, startBackchannelReceiver, startProvider, type BackchannelReceiver, type Browser, type Provider } from './relying-party.js'

/*
 * Back-channel logout (OpenID Connect Back-Channel Logout 1.0): whatever ends a sign-in session —
 * the sign-out page, a Logout of its token, the session ended by id, a revoke-all, a password
 * change, a disable — each client that holds tokens from it and registered a back-channel URI gets
 * one logout token, checked by a real endpoint with `jose` against the provider's JWKS (iss, aud,
 * iat, jti, sid, events). A client without a URI gets nothing; a groups change (its tokens still
 * stand) sends nothing; Logout answers without waiting for the clients; a refused token is tried
 * again, and one never taken is logged; two instances of the service send each token once.
 */

interface Clients {
  /** Two clients with a back-channel URI, one without. */
  rps: { grafana: oidc.Configuration, argo: oidc.Configuration, gitlab: oidc.Configuration }
  ids: { grafana: string, argo: string, gitlab: string }
  receiver: BackchannelReceiver
}

async function registerClients (t: Test, provider: Provider): Promise<Clients> {
  const { app, issuer } = provider
  const receiver = await startBackchannelReceiver(t, issuer)
  const add = async (name: string, backchannel: boolean): Promise<{ rp: oidc.Configuration, id: string }> => {
    const { client, secret } = await app.oidcClients.create({ name, redirectUris: [REDIRECT], backchannelLogoutUri: backchannel ? receiver.url : null }, { userAgent: 'test' })
    return { rp: await discover(provider, client.clientId, secret), id: client.clientId }
  }
  const [grafana, argo, gitlab] = await Promise.all([add('Grafana', true), add('ArgoCD', true), add('GitLab', false)])
  receiver.audience = [grafana.id, argo.id]
  return { rps: { grafana: grafana.rp, argo: argo.rp, gitlab: gitlab.rp }, ids: { grafana: grafana.id, argo: argo.id, gitlab: gitlab.id }, receiver }
}

interface SignedIn {
  person: Browser
  tokens: Array<{ clientId: string, accessToken: string, sid: unknown }>
  /** The browser's sign-in token (AuthToken1). */
  signIn: string
}

/** A browser signed in at the service, single sign-on into all three clients. */
async function signInEverywhere (provider: Provider, clients: Clients, password: string): Promise<SignedIn> {
  const person = browser(provider.base, { username: 'alice', password })
  const tokens: SignedIn['tokens'] = []
  for (const [name, rp] of Object.entries(clients.rps)) {
    const got = await codeFlow(rp, person)
    tokens.push({ clientId: clients.ids[name as keyof Clients['ids']], accessToken: got.access_token, sid: got.claims()?.sid })
  }
  return { person, tokens, signIn: person.jar.cookies.get('AuthToken1') ?? '' }
}

async function login (app: FastifyInstance, password: string): Promise<string> {
  const answer = (await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'alice', password } })).json<{ token?: string }>()
  if (answer.token === undefined) throw new Error('no Login')
  return answer.token
}

/** Waits for the two logout tokens of this sign-in (Grafana's, ArgoCD's), each naming its client's sid; then its tokens are refused. */
async function toldBoth (t: Test, provider: Provider, clients: Clients, signedIn: SignedIn, before: number, what: string): Promise<void> {
  const got = (await clients.receiver.waitFor(before + 2)).slice(before)
  for (const clientId of [clients.ids.grafana, clients.ids.argo]) {
    const sid = signedIn.tokens.find((token) => token.clientId === clientId)?.sid
    t.equal(got.filter((token) => token.claims.aud === clientId && token.claims.sid === sid).length, 1, `${what}: one logout token to ${clientId === clients.ids.grafana ? 'Grafana' : 'ArgoCD'}, naming its session`)
  }
  for (const token of got) t.match(token.claims, { iss: provider.issuer, events: { 'http://schemas.openid.net/event/backchannel-logout': {} } })
  for (const token of signedIn.tokens) t.match(await authenticate(provider.app, token.accessToken), { status: 403 }, `${what}: every access token ended`)
}

function backchannelContract (t: Test, kind: BackendKind): void {
  t.test('every way a sign-in ends sends one logout token to each client with a back-channel URI', async (t) => {
    const provider = await startProvider(t, kind)
    const { app } = provider
    const clients = await registerClients(t, provider)
    let password = PASSWORD

    // A groups change announces the tokens on the feed too, but they stand: nobody is told anything.
    const first = await signInEverywhere(provider, clients, password)
    await app.accounts.setGroups('alice', ['ops', 'dev'])
    t.match(await authenticate(app, first.tokens[0]?.accessToken ?? ''), { status: 0, groups: ['dev', 'ops'] })
    await new Promise((resolve) => setTimeout(resolve, 500))
    t.equal(clients.receiver.requests(), 0, 'the groups change told no client anything')

    // Ended by id, from another session of the account.
    const other = await login(app, password)
    const listed = (await app.inject({ method: 'GET', url: '/auth/sessions', headers: { authorization: `Bearer ${other}` } })).json<{ sessions: Array<{ id: string, current: boolean }> }>()
    const browserSession = listed.sessions.find((session) => !session.current)
    t.equal(listed.sessions.length, 2)
    t.equal((await app.inject({ method: 'DELETE', url: `/auth/sessions/${browserSession?.id ?? ''}`, headers: { authorization: `Bearer ${other}` } })).statusCode, 200)
    await toldBoth(t, provider, clients, first, 0, 'a session ended by id')

    const ways: Array<[string, (signedIn: SignedIn) => Promise<void>]> = [
      ['the sign-out page', async ({ person }) => { t.equal((await person.go('/auth/signout', {})).url.pathname, '/auth/signin') }],
      ['a Logout of the sign-in token', async ({ signIn }) => {
        // The clients answer nothing until released: Logout does not wait for them. No clock: a
        // Logout that waited would come back only once their requests had been answered or given up.
        clients.receiver.hold()
        const answer = await app.inject({ method: 'POST', url: '/auth/Logout', headers: { authorization: `Bearer ${signIn}` } })
        t.equal(answer.statusCode, 200)
        t.equal(clients.receiver.requests() - requestsBefore - clients.receiver.open(), 0, 'Logout answered with every client\'s request still open (or not yet sent)')
        clients.receiver.release()
      }],
      ['a revoke-all', async () => {
        t.ok((await app.accounts.revokeSessions('alice')).ended >= 1)
      }],
      ['a password change', async () => {
        const current = await login(app, password)
        const next = `${PASSWORD} changed`
        const changed = await app.inject({ method: 'POST', url: '/auth/Password', headers: { authorization: `Bearer ${current}` }, payload: { current_password: password, new_password: next } })
        t.equal(changed.statusCode, 200, changed.body)
        password = next
      }],
      ['a disable', async () => {
        await app.accounts.setDisabled('alice', true)
      }]
    ]
    let requestsBefore = 0
    for (const [what, end] of ways) {
      const signedIn = await signInEverywhere(provider, clients, password)
      requestsBefore = clients.receiver.requests()
      const before = clients.receiver.received.length
      await end(signedIn)
      await toldBoth(t, provider, clients, signedIn, before, what)
    }
    await new Promise((resolve) => setTimeout(resolve, 300))
    t.equal(clients.receiver.received.length, 12, 'two logout tokens for each of six endings: none twice, none to GitLab')
    t.same(clients.receiver.refused, [], 'every one a valid logout token')
    t.equal(new Set(clients.receiver.received.map((token) => token.claims.jti)).size, 12, 'each with a jti of its own')
  })

  t.test('a refused logout token is tried again; one never taken is logged with its client', async (t) => {
    const logs = new PassThrough()
    const lines: Array<Record<string, unknown>> = []
    logs.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>)
    })
    const provider = await startProvider(t, kind, { oidc: { backchannelRetryDelaysMs: [50, 100] }, config: { logLevel: 'warn' }, logStream: logs })
    const clients = await registerClients(t, provider)

    clients.receiver.answers = [503, 204]
    const once = await signInEverywhere(provider, clients, PASSWORD)
    await once.person.go('/auth/signout', {})
    const got = await clients.receiver.waitFor(3)
    t.equal(got.filter((token) => token.claims.sid === got[0]?.claims.sid).length, 2, 'the refused one came again, a new token for the same session')
    t.match(lines, [{ level: 40, msg: 'back-channel logout failed: trying again', attempt: 1, retry_in_ms: 50 }], 'the failure logged as a warning, with the retry')

    clients.receiver.answers = [500]
    const before = clients.receiver.received.length
    const never = await signInEverywhere(provider, clients, PASSWORD)
    await never.person.go('/auth/signout', {})
    await clients.receiver.waitFor(before + 6)
    const started = Date.now()
    while (lines.filter((line) => line.level === 50).length < 2 && Date.now() - started < 5000) await new Promise((resolve) => setTimeout(resolve, 20))
    const given = lines.filter((line) => line.level === 50)
    t.same(given.map((line) => line.client_id).sort(), [clients.ids.grafana, clients.ids.argo].sort(), 'each given-up logout token logged at error, with its client')
    t.match(given[0], { msg: 'back-channel logout not delivered: the client was not told its session ended', attempt: 3, reason: /got: 500/ })
    t.notMatch(JSON.stringify(lines), new RegExp(never.signIn), 'no token in the log')
  })
}

t.test('Postgres and Redis', async (t) => {
  backchannelContract(t, 'real')

  t.test('two instances of the service: each logout token is sent once', async (t) => {
    const provider = await startProvider(t, 'real')
    const { testApp } = provider
    const { config, database, redisPrefix } = testApp
    // A second instance on the same Postgres and Redis (the same key prefix), following the same feed.
    const tokens = createRedisTokenStore({
      topology: { kind: 'single', url: await requireRedis() },
      keyPrefix: redisPrefix ?? '',
      denyTtlMs: config.denyTtlSeconds * 1000,
      idleTimeoutMs: idleTimeoutMs(config),
      commandTimeoutMs: TEST_REDIS_COMMAND_TIMEOUT_MS
    })
    await tokens.ready()
    const second = await buildApp(config, { backends: assembleBackends(config, { database, tokens }), logger: { level: 'silent' } })
    t.teardown(async () => {
      await second.close()
      await tokens.close()
    })
    await second.ready()
    const clients = await registerClients(t, provider)
    for (let round = 0; round < 3; round++) {
      const signedIn = await signInEverywhere(provider, clients, PASSWORD)
      await signedIn.person.go('/auth/signout', {})
      await toldBoth(t, provider, clients, signedIn, round * 2, `round ${round + 1}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 400))
    t.equal(clients.receiver.received.length, 6, 'both instances heard every end; one of them sent each token')
  })
})
t.test('embedded default', async (t) => { backchannelContract(t, 'embedded') })
