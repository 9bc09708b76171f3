import type { Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import * as oidc from 'openid-client'
import { readOidc } from '../../src/config/parts/oidc.js'
import type { RedisTopology } from '../../src/core/stores/redis/client.js'
import type { Config } from '../../src/config/config.js'
import { freePort } from '../../support/processes.js'
import { buildTestApp, type BackendKind, type TestApp } from '../support/app.js'
import { Jar, refreshTarget, unescaped } from '../../support/cookie-jar.js'

/*
 * What the OpenID Connect tests share: the service on a real socket with the provider at
 * `<base>/oidc`, an account, a registered client and openid-client's view of it (discovery), and
 * a browser's way through the authorization endpoint and the service's sign-in page (fetch and a
 * cookie jar, following redirects as a browser does, posting the sign-in form as it stands).
 */

export const PASSWORD = 'a long enough passphrase 1'
export const REDIRECT = 'http://127.0.0.1:9/callback'

export { Jar }

export interface Flow {
  app: FastifyInstance
  testApp: TestApp
  base: string
  /** openid-client's configuration of the confidential client registered at REDIRECT. */
  config: oidc.Configuration
  clientId: string
  /** The confidential client's secret (shown once at its registration). */
  secret: string
}

export interface FlowOptions {
  /** The confidential client's redirect_uris (default: REDIRECT). */
  redirectUris?: string[]
  overrides?: Partial<Config>
  /** The service's own logger writes here (buildTestApp's logStream). */
  logStream?: NodeJS.WritableStream
  /** A throwaway Redis topology (a Cluster) instead of the shared Redis. */
  redis?: RedisTopology
}

/** The service with the provider on a free port, alice (group ops) and a confidential client. */
export async function setUp (t: Test, kind: BackendKind, options: FlowOptions = {}): Promise<Flow> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const settings = readOidc({ AUTH_OIDC_ISSUER: `${base}/oidc` }).oidc
  const testApp = await buildTestApp(t, kind, { oidc: settings, ...options.overrides }, {
    ...(options.logStream === undefined ? {} : { logStream: options.logStream }),
    ...(options.redis === undefined ? {} : { redis: options.redis })
  })
  const { app } = testApp
  await app.listen({ port, host: '127.0.0.1' })
  await app.accounts.add('alice', PASSWORD, false)
  await app.accounts.setGroups('alice', ['ops'])
  const { client, secret } = await app.oidcClients.create({ name: 'Grafana', redirectUris: options.redirectUris ?? [REDIRECT] }, { userAgent: 'test' })
  if (secret === undefined) throw new Error('a confidential client without a secret')
  const config = await oidc.discovery(new URL(`${base}/oidc`), client.clientId, secret, undefined, { execute: [oidc.allowInsecureRequests] })
  return { app, testApp, base, config, clientId: client.clientId, secret }
}

/** A public client (no secret: PKCE is its proof) registered beside, as openid-client sees it. */
export async function publicClient (flow: Flow, redirectUris: string[] = [REDIRECT]): Promise<{ config: oidc.Configuration, clientId: string }> {
  const { client } = await flow.app.oidcClients.create({ name: 'CLI', redirectUris, public: true }, { userAgent: 'test' })
  const config = await oidc.discovery(new URL(`${flow.base}/oidc`), client.clientId, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] })
  return { config, clientId: client.clientId }
}

export interface Credentials { username: string, password: string }

/** Where a browser's way ended: back at the client (`back`), or on a page of the service (`page`, its status and body). */
export type Arrival = { back: URL } | { page: { url: URL, status: number, body: string } }

/** The hidden fields of a page's form (rd, prompt), their HTML escapes undone. */
export function hiddenFields (body: string): Record<string, string> {
  const fields: Record<string, string> = {}
  for (const [, name = '', value = ''] of body.matchAll(/<input type="hidden" name="([a-z]+)" value="([^"]*)">/g)) fields[name] = unescaped(value)
  return fields
}

/**
 * Follows a browser's way from `url`: redirects and a page's refresh taken, the sign-in form filled
 * in and posted (with its hidden fields, as a browser posts them) when `signIn` is given, until the
 * browser is sent to `redirect` (the client) or a page that goes nowhere is shown.
 */
export async function browse (base: string, jar: Jar, url: URL, signIn?: Credentials, redirect = REDIRECT): Promise<Arrival> {
  let next: string = url.href
  for (let hop = 0; hop < 12; hop++) {
    const target = new URL(next, base)
    if (target.href.startsWith(redirect)) return { back: target }
    const response = await fetch(target, { redirect: 'manual', headers: { cookie: jar.header() } })
    jar.take(response)
    let location = response.headers.get('location')
    const body = location === null ? await response.text() : ''
    if (location === null && target.pathname === '/auth/signin' && response.status === 200 && signIn !== undefined) {
      const form = new URLSearchParams({ ...hiddenFields(body), username: signIn.username, password: signIn.password })
      const posted = await fetch(`${base}/auth/signin`, { method: 'POST', redirect: 'manual', headers: { cookie: jar.header(), origin: base, 'content-type': 'application/x-www-form-urlencoded' }, body: form })
      jar.take(posted)
      location = posted.headers.get('location')
      if (location === null) return { page: { url: target, status: posted.status, body: await posted.text() } }
    } else if (location === null) {
      location = response.status === 200 ? refreshTarget(body) : null
      if (location === null) return { page: { url: target, status: response.status, body } }
    }
    next = location
  }
  throw new Error('too many redirects')
}

/** As browse, for a way that must end back at the client. */
export async function authorize (base: string, jar: Jar, url: URL, signIn?: Credentials, redirect = REDIRECT): Promise<URL> {
  const arrival = await browse(base, jar, url, signIn, redirect)
  if ('back' in arrival) return arrival.back
  throw new Error(`${arrival.page.url.pathname}: ${arrival.page.status} without a redirect: ${arrival.page.body.slice(0, 300)}`)
}

/** An authorization URL with PKCE S256 and a state, and what the code exchange checks. */
export async function pkceRequest (config: oidc.Configuration, parameters: Record<string, string> = {}): Promise<{ url: URL, verifier: string, state: string }> {
  const verifier = oidc.randomPKCECodeVerifier()
  const state = oidc.randomState()
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT, scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state, ...parameters
  })
  return { url, verifier, state }
}

/** Signs alice in through the code flow and exchanges the code: her tokens, and the browser that holds her sign-in. */
export async function signedInTokens (flow: Flow, jar = new Jar(), parameters: Record<string, string> = {}): Promise<{ jar: Jar, tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>> }> {
  const { url, verifier, state } = await pkceRequest(flow.config, parameters)
  const back = await authorize(flow.base, jar, url, { username: 'alice', password: PASSWORD })
  const tokens = await oidc.authorizationCodeGrant(flow.config, back, { pkceCodeVerifier: verifier, expectedState: state })
  return { jar, tokens }
}

/** Authenticate's answer to a token. */
export async function authenticate (app: FastifyInstance, token: string): Promise<Record<string, unknown>> {
  return (await app.inject({ method: 'POST', url: '/auth/Authenticate', payload: { token } })).json<Record<string, unknown>>()
}

/** The browser's sign-out at the service (POST /auth/signout, as its page does). */
export async function signOut (base: string, jar: Jar): Promise<Response> {
  const response = await fetch(`${base}/auth/signout`, { method: 'POST', redirect: 'manual', headers: { cookie: jar.header(), origin: base } })
  jar.take(response)
  return response
}
