import type { Test } from 'tap'
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { freePort } from '../../support/processes.js'
import { authenticate, Jar, PASSWORD, REDIRECT } from './support.js'
import * as oidc from 'openid-client'
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose'
import { readOidc, type OidcConfig } from '../../src/config/parts/oidc.js'
import type { Config } from '../../src/config/config.js'
import { buildTestApp, type BackendKind, type TestApp } from '../support/app.js'

/*
 * What the device, logout and back-channel tests share, beside support.ts (its jar, account and
 * Authenticate): the service on a real socket with the provider on, a browser's way through any of
 * its pages and forms (fetch and a cookie jar), openid-client (panva)
 * as the relying party, and a relying party's back-channel logout endpoint that checks each logout
 * token with `jose` against the provider's JWKS, as a real one would.
 */

export { authenticate, Jar, PASSWORD, REDIRECT }
export const POST_LOGOUT = 'http://127.0.0.1:9/signed-out'

/** Where a browser's way ended: a page of the service, or a redirect away from it (to a client). */
export interface Landing {
  url: URL
  status: number
  headers: Headers
  html: string
}

export interface Browser {
  readonly jar: Jar
  /** GET `url` (or POST `form` to it) and follow the service's redirects, signing in when the sign-in page asks. */
  go (url: string | URL, form?: Record<string, string>): Promise<Landing>
}

export function browser (base: string, signIn?: { username: string, password: string }): Browser {
  const jar = new Jar()
  const request = async (target: URL, form: Record<string, string> | undefined): Promise<Response> => {
    const response = await fetch(target, form === undefined
      ? { redirect: 'manual', headers: { cookie: jar.header() } }
      : { method: 'POST', redirect: 'manual', headers: { cookie: jar.header(), origin: base, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) })
    jar.take(response)
    return response
  }
  return {
    jar,
    async go (url, form) {
      let target = new URL(url, base)
      let body = form
      for (let hop = 0; hop < 16; hop++) {
        if (target.origin !== base) return { url: target, status: 0, headers: new Headers(), html: '' }
        if (body === undefined && target.pathname === '/auth/signin' && signIn !== undefined && !jar.cookies.has('AuthToken1')) {
          body = { username: signIn.username, password: signIn.password, rd: target.searchParams.get('rd') ?? '' }
        }
        const response = await request(target, body)
        body = undefined
        let location = response.headers.get('location')
        if (response.status < 300 || response.status >= 400 || location === null) {
          const html = await response.text()
          // The provider's continue page after a sign-in goes on by a refresh, as a browser takes it.
          location = response.status === 200 ? refreshOf(html) : null
          if (location === null) return { url: target, status: response.status, headers: response.headers, html }
        }
        target = new URL(location, target)
      }
      throw new Error('too many redirects')
    }
  }
}

const unescaped = (value: string): string => value.replace(/&#(\d+);/g, (_all, code: string) => String.fromCharCode(Number(code)))

/** Where a page's refresh sends the browser on, or null. */
function refreshOf (html: string): string | null {
  const found = /<meta http-equiv="refresh" content="0;url=([^"]*)">/.exec(html)
  return found?.[1] === undefined ? null : unescaped(found[1])
}

/** The fields of a page's `index`th form: its action and every input with a name and value. */
export function formOf (html: string, index = 0): { action: string, fields: Record<string, string> } {
  const forms = [...html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/g)]
  const form = forms[index]
  if (form === undefined) throw new Error(`no form ${index} in the page: ${html.slice(0, 400)}`)
  const action = /action="([^"]*)"/.exec(form[1] ?? '')?.[1] ?? ''
  const fields: Record<string, string> = {}
  for (const input of (form[2] ?? '').matchAll(/<input\b([^>]*)>/g)) {
    const name = /name="([^"]*)"/.exec(input[1] ?? '')?.[1]
    const value = /value="([^"]*)"/.exec(input[1] ?? '')?.[1]
    if (name !== undefined) fields[name] = unescaped(value ?? '')
  }
  return { action: unescaped(action), fields }
}

export interface Provider {
  app: FastifyInstance
  base: string
  issuer: string
  testApp: TestApp
}

/** The service on a socket with the provider at `<base>/oidc`, and alice (in group ops). */
export async function startProvider (t: Test, kind: BackendKind, overrides: { oidc?: Partial<OidcConfig>, config?: Partial<Config>, logStream?: NodeJS.WritableStream } = {}): Promise<Provider> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const settings = readOidc({ AUTH_OIDC_ISSUER: `${base}/oidc` }).oidc
  if (settings === undefined) throw new Error('the provider is off')
  const testApp = await buildTestApp(t, kind, { ...overrides.config, oidc: { ...settings, ...overrides.oidc } }, overrides.logStream === undefined ? {} : { logStream: overrides.logStream })
  const { app } = testApp
  await app.listen({ port, host: '127.0.0.1' })
  await app.accounts.add('alice', PASSWORD, false)
  await app.accounts.setGroups('alice', ['ops'])
  return { app, base, issuer: `${base}/oidc`, testApp }
}

/** openid-client's view of the provider for one client. */
export async function discover (provider: Provider, clientId: string, secret: string | undefined): Promise<oidc.Configuration> {
  return await oidc.discovery(new URL(provider.issuer), clientId, secret, secret === undefined ? oidc.None() : undefined, { execute: [oidc.allowInsecureRequests] })
}

/** The code flow from the authorization URL to the tokens, in `browser`. */
export async function codeFlow (config: oidc.Configuration, browse: Browser, scope = 'openid groups'): Promise<oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers> {
  const verifier = oidc.randomPKCECodeVerifier()
  const state = oidc.randomState()
  const url = oidc.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope, code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state })
  const back = await browse.go(url)
  if (!back.url.href.startsWith(REDIRECT)) throw new Error(`not back at the client: ${back.url.href} ${back.status} ${back.html.slice(0, 300)}`)
  return await oidc.authorizationCodeGrant(config, back.url, { pkceCodeVerifier: verifier, expectedState: state })
}

export interface LogoutToken {
  /** The logout token's claims, verified against the provider's JWKS. */
  claims: JWTPayload & { sid?: string, events?: Record<string, unknown> }
  header: Record<string, unknown>
}

export interface BackchannelReceiver {
  readonly url: string
  /** Verified logout tokens, in arrival order (those answered with an error too). */
  readonly received: LogoutToken[]
  /** Requests that were no valid logout token (bad signature, wrong issuer or audience, no token). */
  readonly refused: string[]
  /** Requests that came, valid or not, counted as they arrive (before the token is checked). */
  readonly requests: () => number
  /** What to answer, in turn; the last one from then on. */
  answers: number[]
  /** Held this long before answering (a slow client). */
  delayMs: number
  /**
   * Answers nothing until `release()`: the requests that came wait, open. `open()` counts those
   * neither answered nor given up by the provider: a caller that returns while they are open did
   * not wait for them, whatever the clock says.
   */
  hold (): void
  release (): void
  open (): number
  /** The clients whose logout tokens are taken (each token's `aud` one of them). */
  audience: string[]
  waitFor (count: number, timeoutMs?: number): Promise<LogoutToken[]>
}

async function bodyOf (request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

/**
 * A relying party's back-channel logout endpoint (OpenID Connect Back-Channel Logout 1.0 §2.6): a
 * real HTTP server that takes `logout_token` from the form body and validates it as the spec says
 * (signature by the issuer's JWKS, iss, aud, iat, the events claim, a sid or sub, no nonce).
 * `audience` is set once the clients are registered.
 */
export async function startBackchannelReceiver (t: Test, issuer: string): Promise<BackchannelReceiver> {
  const jwks = createRemoteJWKSet(new URL(`${issuer}/jwks`))
  const received: LogoutToken[] = []
  const refused: string[] = []
  let answered = 0
  let requests = 0
  let opened = 0
  let held: { promise: Promise<void>, release: () => void } | undefined
  const server = createServer((request, response) => {
    requests++
    opened++
    response.once('close', () => { opened-- })
    bodyOf(request).then(async (body) => {
      const token = new URLSearchParams(body).get('logout_token')
      if (request.method !== 'POST' || request.headers['content-type'] !== 'application/x-www-form-urlencoded' || token === null) throw new Error('no logout_token in a form POST')
      const { payload, protectedHeader } = await jwtVerify(token, jwks, { issuer, audience: receiver.audience, typ: 'logout+jwt', requiredClaims: ['iat', 'jti', 'events'] })
      const events = payload.events
      if (typeof events !== 'object' || events === null || !('http://schemas.openid.net/event/backchannel-logout' in events)) throw new Error('no back-channel logout event')
      if ('nonce' in payload) throw new Error('a nonce in a logout token')
      if (typeof payload.sid !== 'string' && typeof payload.sub !== 'string') throw new Error('neither sid nor sub')
      received.push({ claims: payload as LogoutToken['claims'], header: protectedHeader as Record<string, unknown> })
      if (receiver.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, receiver.delayMs))
      await held?.promise
      const answer = receiver.answers[Math.min(answered++, receiver.answers.length - 1)] ?? 200
      response.writeHead(answer, { 'cache-control': 'no-store' }).end()
    }).catch((error: unknown) => {
      refused.push(error instanceof Error ? error.message : String(error))
      response.writeHead(400).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })
  const receiver: BackchannelReceiver = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/backchannel-logout`,
    received,
    refused,
    requests: () => requests,
    answers: [200],
    delayMs: 0,
    hold () {
      let release = (): void => {}
      const promise = new Promise<void>((resolve) => { release = resolve })
      held = { promise, release }
    },
    release () {
      held?.release()
      held = undefined
    },
    open: () => opened,
    audience: [],
    async waitFor (count: number, timeoutMs = 10_000) {
      const started = Date.now()
      while (received.length < count) {
        if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${count} logout tokens (got ${received.length}; refused: ${refused.join('; ')})`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      return received
    }
  }
  return receiver
}
