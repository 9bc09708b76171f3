import t, { type Test } from 'tap'
import * as oidc from 'openid-client'
import { Redis } from 'ioredis'
import type { AuthTokenGuardOptions } from '@auth-token-service/guard'
import { requireRedis } from '../../support/redis.js'
import { rejection } from '../support/rejection.js'
import { buildGuardedApp, FEED_NOT_TTL_MS, httpGuardOptions, untilRefused, warm, type GuardedApp, type VerificationCounter } from '../guard/support.js'
import { authenticate, authorize, Jar, PASSWORD, pkceRequest, REDIRECT, setUp, signOut, type Flow } from './support.js'

/*
 * Every way a sign-in session ends ends every token it gave out, at once, everywhere (api-contract,
 * Single sign-on: "sign-out, Logout of the session's token, a session ended by id, disable, password
 * change and revoke-all end every access and refresh token the session gave out — at once,
 * everywhere, guards included"; "Revoking a refresh token at the revocation endpoint ends its grant's
 * tokens"; removing the client "ends every token it holds"). For each way: Authenticate refuses the
 * access token as soon as the ending returns, a guard in each mode with its cache on refuses it
 * through the revocation feed (long before its cache's 60 s), and the refresh token is refused at
 * the token endpoint. (The back-channel logout token of each way: backchannel-logout.test.ts.)
 */

interface Guard { mode: string, guarded: GuardedApp, verifications: VerificationCounter }

async function guards (t: Test, flow: Flow): Promise<Guard[]> {
  const redis = new Redis(await requireRedis())
  t.teardown(() => { redis.disconnect() })
  let count = 0
  const get = redis.get.bind(redis)
  redis.get = (async (key: string) => { count++; return await get(key) }) as unknown as Redis['get']
  const cache = { maxEntries: 100, ttlMs: 60_000 }
  const modes: Array<[string, { options: AuthTokenGuardOptions, verifications: VerificationCounter }]> = [
    ['direct', { options: { redis, keyPrefix: flow.testApp.redisPrefix ?? '', cache }, verifications: { count: () => count } }],
    ['http', httpGuardOptions(`${flow.base}/auth/Authenticate`, { cache })]
  ]
  return await Promise.all(modes.map(async ([mode, { options, verifications }]) => ({ mode, verifications, guarded: await buildGuardedApp(t, options) })))
}

interface SignedIn { jar: Jar, accessToken: string, refreshToken: string, signIn: string }

/** A new browser signs alice in through the code flow of `config`: its tokens and its sign-in token. */
async function signIn (flow: Flow, config: oidc.Configuration, password: string): Promise<SignedIn> {
  const jar = new Jar()
  const { url, verifier, state } = await pkceRequest(config)
  const back = await authorize(flow.base, jar, url, { username: 'alice', password })
  const tokens = await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state })
  return { jar, accessToken: tokens.access_token, refreshToken: tokens.refresh_token ?? '', signIn: jar.cookies.get('AuthToken1') ?? '' }
}

async function login (flow: Flow, password: string): Promise<string> {
  const answer = (await flow.app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'alice', password } })).json<{ token?: string }>()
  if (answer.token === undefined) throw new Error('no Login')
  return answer.token
}

t.test('each way a sign-in session ends: its access token refused at once by Authenticate and by guards with a cache, its refresh token refused', async (t) => {
  const flow = await setUp(t, 'real', { overrides: { host: '127.0.0.1', publicInternals: true } })
  const { app } = flow
  const running = await guards(t, flow)
  let config = flow.config
  let password = PASSWORD
  const ways: Array<[string, (signedIn: SignedIn) => Promise<void>, string]> = [
    ['the sign-out page', async ({ jar }) => { t.ok((await signOut(flow.base, jar)).status < 400) }, 'invalid_grant'],
    ['a Logout of the sign-in token', async ({ signIn }) => {
      t.equal((await app.inject({ method: 'POST', url: '/auth/Logout', headers: { authorization: `Bearer ${signIn}` } })).statusCode, 200)
    }, 'invalid_grant'],
    ['the session ended by id', async () => {
      const other = await login(flow, password)
      const listed = (await app.inject({ method: 'GET', url: '/auth/sessions', headers: { authorization: `Bearer ${other}` } })).json<{ sessions: Array<{ id: string, current: boolean }> }>()
      const browserSession = listed.sessions.find((session) => !session.current)
      t.equal((await app.inject({ method: 'DELETE', url: `/auth/sessions/${browserSession?.id ?? ''}`, headers: { authorization: `Bearer ${other}` } })).statusCode, 200)
    }, 'invalid_grant'],
    ['a revoke-all', async () => { t.ok((await app.accounts.revokeSessions('alice')).ended >= 1) }, 'invalid_grant'],
    ['a password change', async () => {
      const current = await login(flow, password)
      const next = `${PASSWORD} changed`
      const changed = await app.inject({ method: 'POST', url: '/auth/Password', headers: { authorization: `Bearer ${current}` }, payload: { current_password: password, new_password: next } })
      t.equal(changed.statusCode, 200, changed.body)
      password = next
    }, 'invalid_grant'],
    ['a disable', async () => { await app.accounts.setDisabled('alice', true) }, 'invalid_grant'],
    ['the refresh token revoked at the revocation endpoint', async ({ refreshToken }) => {
      await oidc.tokenRevocation(config, refreshToken, { token_type_hint: 'refresh_token' })
    }, 'invalid_grant'],
    ['the client removed', async () => { await app.oidcClients.remove(config.clientMetadata().client_id, { userAgent: 'test' }) }, 'invalid_client']
  ]
  for (const [what, end, refreshError] of ways) {
    await app.accounts.setDisabled('alice', false)
    const signedIn = await signIn(flow, config, password)
    t.match(await authenticate(app, signedIn.accessToken), { status: 0, kind: 'oidc' }, `${what}: the access token works before`)
    for (const { guarded, verifications } of running) await warm(guarded, verifications, signedIn.accessToken)

    const since = performance.now()
    await end(signedIn)
    t.match(await authenticate(app, signedIn.accessToken), { status: 403 }, `${what}: Authenticate refuses the access token as soon as the ending returns`)
    for (const { mode, guarded } of running) {
      const took = await untilRefused(guarded, signedIn.accessToken, since)
      t.ok(took < FEED_NOT_TTL_MS, `${what}: the ${mode} guard's cache refuses it ${took.toFixed(0)} ms after the ending began (the feed, not the cache's 60 s)`)
    }
    t.match(await rejection(oidc.refreshTokenGrant(config, signedIn.refreshToken)), { error: refreshError }, `${what}: the refresh token is refused (${refreshError})`)
    t.match(await rejection(oidc.fetchUserInfo(config, signedIn.accessToken, oidc.skipSubjectCheck)), { status: 401 }, `${what}: userinfo refuses the access token`)
  }
  // The removed client's id is refused for good; a client registered after it signs people in again.
  const { client, secret } = await app.oidcClients.create({ name: 'Grafana again', redirectUris: [REDIRECT] }, { userAgent: 'test' })
  config = await oidc.discovery(new URL(`${flow.base}/oidc`), client.clientId, secret, undefined, { execute: [oidc.allowInsecureRequests] })
  const after = await signIn(flow, config, password)
  t.match(await authenticate(app, after.accessToken), { status: 0, kind: 'oidc', client_id: client.clientId }, 'a sign-in after all of them works')
})
