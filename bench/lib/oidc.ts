import * as oidc from 'openid-client'
import { Jar, refreshTarget } from '../../support/cookie-jar.js'

/*
 * The OpenID Connect rows' preparations, made as a relying party makes them: a client registered
 * through the admin API, a person signed in through the service's own sign-in page (a browser's
 * cookie jar and redirects, as test/oidc/code-flow.test.ts follows them), and the code flow with
 * PKCE through openid-client (panva), which checks every ID token it is given (signature, alg,
 * issuer, audience, nonce).
 */

/** Never contacted: the bench stops at the redirect and reads the code off its URL. */
export const BENCH_REDIRECT_URI = 'http://127.0.0.1:9/callback'

export interface BenchClient {
  clientId: string
  /** Shown once by the admin API; kept in this process only, never logged. */
  secret: string
}

/** A confidential client (client_secret_basic), registered as an operator registers one: POST /admin/oidc/clients. */
export async function registerClient (internalOrigin: string, adminKey: string, name: string): Promise<BenchClient> {
  const response = await fetch(`${internalOrigin}/admin/oidc/clients`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, redirect_uris: [BENCH_REDIRECT_URI] })
  })
  const body = await response.json() as { client?: { client_id?: unknown }, client_secret?: unknown }
  const clientId = body.client?.client_id
  if (!response.ok || typeof clientId !== 'string' || typeof body.client_secret !== 'string') throw new Error(`the admin API refused the bench's OpenID Connect client ${name}: ${response.status}`)
  return { clientId, secret: body.client_secret }
}

/** A person's account, made through the admin API (one argon2id hash), so that no Login scenario ever signs it in (they cycle through the seeded accounts). */
export async function createPerson (internalOrigin: string, adminKey: string, username: string, password: string): Promise<void> {
  const response = await fetch(`${internalOrigin}/admin/users`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ username, password })
  })
  if (!response.ok) throw new Error(`the admin API refused the bench's account ${username}: ${response.status}`)
}

/** What the code flow and a refresh give. */
export interface Tokens {
  accessToken: string
  refreshToken: string
  /** The ID token's `alg` header, as openid-client checked it. */
  idTokenAlg: string
}

/**
 * One browser (its cookie jar) signed in at the service as one person, asking a provider for
 * tokens: the first authorization passes through the sign-in page; the next ones are single
 * sign-on (straight back with a code), each a grant's new code and so a new refresh token.
 */
export interface Browser {
  /**
   * Whether a code flow has passed through the sign-in page yet. Until then, flows must go one at a
   * time: concurrent ones would share the jar's interaction cookie and finish each other's flows.
   */
  readonly signedIn: boolean
  /** The code flow for `client`, PKCE S256, through openid-client. */
  codeFlow (client: BenchClient, options?: { idTokenAlg?: string }): Promise<Tokens>
  /** A refresh grant through openid-client (it checks the ID token the answer carries). */
  refresh (client: BenchClient, refreshToken: string, options?: { idTokenAlg?: string }): Promise<Tokens>
}

export function signedInBrowser (origin: string, issuer: string, person: { username: string, password: string }): Browser {
  const jar = new Jar()
  const configs = new Map<string, Promise<oidc.Configuration>>()
  const configOf = async (client: BenchClient, alg: string): Promise<oidc.Configuration> => {
    const key = `${client.clientId} ${alg}`
    let config = configs.get(key)
    if (config === undefined) {
      // The client's expected ID token alg is part of its metadata: openid-client refuses any other.
      config = oidc.discovery(new URL(issuer), client.clientId, { client_secret: client.secret, id_token_signed_response_alg: alg }, oidc.ClientSecretBasic(client.secret), { execute: [oidc.allowInsecureRequests] })
      configs.set(key, config)
    }
    return await config
  }
  const tokensOf = (response: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers, what: string): Tokens => {
    const idToken = response.id_token
    if (response.refresh_token === undefined || idToken === undefined) throw new Error(`${what}: no refresh token or ID token in the answer`)
    const header = JSON.parse(Buffer.from(idToken.split('.')[0] ?? '', 'base64url').toString('utf8')) as { alg?: unknown }
    return { accessToken: response.access_token, refreshToken: response.refresh_token, idTokenAlg: String(header.alg) }
  }

  /** Follows the browser's way from the authorization URL to the redirect back to the client, signing in when asked. */
  const authorize = async (url: URL): Promise<URL> => {
    let next: string = url.href
    for (let hop = 0; hop < 12; hop++) {
      const target = new URL(next, origin)
      if (target.href.startsWith(BENCH_REDIRECT_URI)) return target
      let response: Response
      if (target.pathname === '/auth/signin' && !jar.cookies.has('AuthToken1')) {
        const body = new URLSearchParams({ username: person.username, password: person.password, rd: target.searchParams.get('rd') ?? '' })
        response = await fetch(`${origin}/auth/signin`, { method: 'POST', redirect: 'manual', headers: { cookie: jar.header(), origin, 'content-type': 'application/x-www-form-urlencoded' }, body })
      } else {
        response = await fetch(target, { redirect: 'manual', headers: { cookie: jar.header() } })
      }
      jar.take(response)
      // A finished sign-in goes on through the provider's continue page (a refresh), as a browser follows it.
      const location = response.headers.get('location') ?? (response.status === 200 ? refreshTarget(await response.text()) : null)
      if (location === null) throw new Error(`${target.pathname}: ${response.status} without a redirect`)
      next = location
    }
    throw new Error('too many redirects')
  }

  let signedIn = false
  return {
    get signedIn () { return signedIn },
    async codeFlow (client, options = {}) {
      const alg = options.idTokenAlg ?? 'RS256'
      const config = await configOf(client, alg)
      const verifier = oidc.randomPKCECodeVerifier()
      const state = oidc.randomState()
      const nonce = oidc.randomNonce()
      const back = await authorize(oidc.buildAuthorizationUrl(config, {
        redirect_uri: BENCH_REDIRECT_URI, scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state, nonce
      }))
      const tokens = tokensOf(await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce }), 'the code grant')
      signedIn = true
      return tokens
    },
    async refresh (client, refreshToken, options = {}) {
      const config = await configOf(client, options.idTokenAlg ?? 'RS256')
      return tokensOf(await oidc.refreshTokenGrant(config, refreshToken), 'the refresh grant')
    }
  }
}

/**
 * Refresh tokens for a load of refresh grants, each presented once. A request takes one; its
 * answer puts the rotated one back (a refresh rotates: the one presented is spent). So the pool
 * refills itself as the load runs, and loses only the tokens of requests in flight when a run
 * ends (spent by the service, their answers dropped by autocannon): `fill` tops it up with new
 * code grants before each run. A token is never presented twice: a second use of a spent one is
 * the provider's sign of a stolen token, and ends the whole grant (test/oidc).
 */
export interface RefreshPool {
  take (): string | undefined
  put (token: string): void
  readonly size: number
  /** Tokens made by code grants so far (the rest came back rotated). */
  readonly made: number
  /** Tops the pool up to `count` tokens, `concurrency` code flows at a time. */
  fill (count: number, concurrency?: number): Promise<void>
}

export function refreshPool (browser: Browser, client: BenchClient, options: { idTokenAlg?: string } = {}): RefreshPool {
  const tokens: string[] = []
  let made = 0
  return {
    take: () => tokens.pop(),
    put: (token) => { tokens.push(token) },
    get size () { return tokens.length },
    get made () { return made },
    async fill (count, concurrency = 4) {
      const missing = count - tokens.length
      if (missing <= 0) return
      let left = missing
      const flow = async (): Promise<void> => {
        left--
        tokens.push((await browser.codeFlow(client, options)).refreshToken)
        made++
      }
      // Single sign-on from the second flow on: the first signs in alone.
      if (!browser.signedIn) await flow()
      const worker = async (): Promise<void> => {
        while (left > 0) await flow()
      }
      await Promise.all(Array.from({ length: Math.min(concurrency, left) }, worker))
    }
  }
}
