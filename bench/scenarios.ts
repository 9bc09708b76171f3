import type autocannon from 'autocannon'
import { accountName } from './lib/accounts.js'
import type { LoadSpec } from './lib/load.js'
import type { RefreshPool } from './lib/oidc.js'

/** Where each server of the run listens, and what the requests present. */
export interface ScenarioContext {
  origins: {
    service: string
    bare: string
    oneGet: string
    /** A second one-GET server, the A/A check of the measurement. */
    oneGetTwin: string
    jwt: string
    argon2: string
    argon2NodeRs: string
    ordersDirect: string
    ordersCached: string
    /** The example's GET /orders without the guard: the ceiling of the guarded route. */
    ordersUnguarded: string
    /** A copy of the service whose hasher runs on the other argon2 binding. */
    serviceOtherBinding: string
    /** The service with tracing on, exporting to a local OTLP sink (servers/otlp-sink.ts). */
    serviceTraced: string
    /** The service with AUTH_IDLE_TIMEOUT_SECONDS set. */
    serviceIdle: string
    /** The service with webhooks on, delivering to a local receiver that verifies each signature (servers/webhook-receiver.ts). */
    serviceWebhooks: string
    /** A copy of the service (servers/service-oidc-alg.ts) whose clients' ID tokens are signed with ES256. */
    serviceOidcEs256: string
  }
  /** The binding the service's own hasher uses. */
  serviceBinding: Binding
  /** An active token, issued by the service's own Login. */
  token: string
  /** An API key (`atsk_…`) of a service account, made through the service's admin API. */
  apiKey: string
  /** An active token, from the service's own Login, of an account in 20 groups (its record carries them). */
  groupsToken: string
  /** An access token of the service's OpenID Connect provider (code flow, openid-client): a token of the service, kind oidc. */
  oidcAccessToken: string
  /** The refresh grant's loads: the service (ID tokens RS256, the default) and its ES256 copy. */
  refresh: { rs256: RefreshLoad, es256: RefreshLoad }
  /** An active token issued by the idle-timeout service's own Login (so it has its idle key). */
  idleToken: string
  /** Shaped like a token, never issued. */
  unknownToken: string
  jwtToken: string
  /** Every seeded account's password. */
  password: string
  accounts: number
  /** autocannon's connections: the most refresh tokens in flight at once. */
  connections: number
}

export type Binding = 'argon2' | 'node-rs'

/** A provider's token endpoint, a client's credentials for it, and the refresh tokens to present. */
export interface RefreshLoad {
  tokenEndpoint: string
  /** `Basic …` of the client's id and secret (client_secret_basic). */
  authorization: string
  pool: RefreshPool
}

export type Group = 'baselines' | 'ceilings' | 'authenticate' | 'login' | 'oidc' | 'guard' | 'logs' | 'storm'

export type ServerName = keyof ScenarioContext['origins']

export interface Scenario {
  id: string
  title: string
  group: Group
  /** The server under load (its CPU time per request is reported). */
  server: ServerName
  /** The scenario whose figures (same round) this one is divided by; none for a reference. */
  baseline?: string
  /**
   * Scenarios run again right before this one in every round, so that its ratios to them
   * compare runs seconds apart rather than a round apart: this VM's speed drifts by tens of
   * percent within a minute (bench/README.md), and a ratio of two runs far apart measures
   * the drift. The ratios to these ids use those adjacent runs.
   */
  paired?: string[]
  /**
   * A ceiling measured only beside the scenarios that pair it (never on its own): its row
   * shows its runs beside the first of them that ran.
   */
  besideOnly?: boolean
  /**
   * Stop the server's log reader (SIGSTOP) for part of each measured run, then resume it
   * (SIGCONT), and report the requests sent meanwhile apart. Its paired scenarios run right
   * before it and again right after it, the same seconds of their runs marked.
   */
  stopsLogReader?: boolean
  /**
   * Measured in whole runs, its partners right before it, never in slices: a traced service
   * exports its spans in batches (512 spans) that take longer than a slice, so a slice's
   * requests still in flight when it ends (their CPU counted, their answers not) measured the
   * slicing more than the requests (bench/README.md, tracing).
   */
  unsliced?: boolean
  /**
   * The shortest run that still measures it (hashing: node-argon2 verifies in 0.1-0.35 s
   * here; a stopped log reader: the pipe must fill, and the stop outlast the noise); only a
   * smoke run's shorter runs are raised to it, its partners' unsliced runs with it.
   */
  minSeconds?: number
  /** Requests per unit of work compared with the baseline (Logout + Login: two requests a cycle). */
  requestsPerUnit?: number
  /** Runs before each of its runs, outside the measured time (the refresh grant's pool topped up with new code grants). */
  prepare?: () => Promise<void>
  /** Its server's CPU per request is also read by kind of thread (event loop, libuv's pool, V8's workers). */
  threads?: boolean
  load: LoadSpec
  /** Runs at the same time as `load`, in its own autocannon instance; reported as `background.id`. */
  background?: { id: string, title: string, baseline: string, server: ServerName, load: LoadSpec }
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

/**
 * Logins cycle through the seeded accounts (a new account for each request), so the
 * per-account limits and the account index see what many users logging in look like.
 */
function loginSpec (context: ScenarioContext, password: string, expected: number, origin = context.origins.service): LoadSpec {
  let next = 0
  const encodedPassword = encodeURIComponent(password)
  return {
    url: `${origin}/auth/Login`,
    expectedStatuses: [expected],
    requests: [{
      method: 'POST',
      path: '/auth/Login',
      headers: FORM,
      setupRequest: (request) => ({ ...request, body: `username=${encodeURIComponent(accountName(next++ % context.accounts))}&password=${encodedPassword}` })
    }]
  }
}

/** Each connection logs in, then logs out the token it was just given. */
function logoutLoginSpec (context: ScenarioContext): LoadSpec {
  const [login] = loginSpec(context, context.password, 200).requests ?? []
  if (login === undefined) throw new Error('no login request')
  const tokens = new WeakMap<object, string>()
  const requests: autocannon.Request[] = [
    {
      ...login,
      onResponse: (status, body, connection) => {
        if (status !== 200) return
        const parsed = JSON.parse(body) as { token?: unknown }
        if (typeof parsed.token === 'string') tokens.set(connection, parsed.token)
      }
    },
    {
      method: 'POST',
      path: '/auth/Logout',
      headers: FORM,
      setupRequest: (request, connection) => ({ ...request, body: `token=${tokens.get(connection) ?? ''}` })
    }
  ]
  return { url: `${context.origins.service}/auth/Logout`, expectedStatuses: [200], requests }
}

/**
 * The token endpoint's refresh grant, each request presenting a refresh token never presented
 * before: taken from the pool, and its answer's rotated token put back (lib/oidc.ts RefreshPool).
 * The rotated token is read off the answer with a regular expression: this process is the load
 * generator, and its CPU is the load's.
 */
function refreshSpec (load: RefreshLoad): LoadSpec {
  const { pool } = load
  const rotated = /"refresh_token":"([^"]+)"/
  return {
    url: load.tokenEndpoint,
    expectedStatuses: [200],
    requests: [{
      method: 'POST',
      path: new URL(load.tokenEndpoint).pathname,
      headers: { ...FORM, authorization: load.authorization },
      // An empty pool sends no token (a 400, counted as unexpected): the pool is filled for more than the connections.
      setupRequest: (request) => ({ ...request, body: `grant_type=refresh_token&refresh_token=${encodeURIComponent(pool.take() ?? '')}` }),
      onResponse: (status, body) => {
        if (status !== 200) return
        const token = rotated.exec(body)?.[1]
        if (token !== undefined) pool.put(token)
      }
    }]
  }
}

export function defineScenarios (context: ScenarioContext): Scenario[] {
  const { origins, token } = context
  const authenticate = `${origins.service}/auth/Authenticate`
  const oneGetAuthenticate = `${origins.oneGet}/auth/Authenticate`
  const bearer = { authorization: `Bearer ${token}` }
  const cookie = { cookie: `AuthToken1=${token}` }
  const other: Binding = context.serviceBinding === 'argon2' ? 'node-rs' : 'argon2'
  const ownArgon2 = context.serviceBinding === 'argon2' ? 'argon2' : 'argon2-node-rs'
  const authenticateQuery: LoadSpec = { url: `${authenticate}?token=${token}`, expectedStatuses: [200] }

  // Each token source's request, sent to the service or to the one-GET route of its ceiling.
  const shapes = {
    'path-get': (base: string): LoadSpec => ({ url: `${base}/${token}`, expectedStatuses: [200] }),
    'path-post': (base: string): LoadSpec => ({ url: `${base}/${token}`, method: 'POST', expectedStatuses: [200] }),
    query: (base: string): LoadSpec => ({ url: `${base}?token=${token}`, expectedStatuses: [200] }),
    form: (base: string): LoadSpec => ({ url: base, method: 'POST', headers: FORM, body: `token=${token}`, expectedStatuses: [200] }),
    'cookie-get': (base: string): LoadSpec => ({ url: base, headers: cookie, expectedStatuses: [200] }),
    'cookie-post': (base: string): LoadSpec => ({ url: base, method: 'POST', headers: cookie, expectedStatuses: [200] })
  }
  const ceiling = (id: string, what: string, load: LoadSpec): Scenario =>
    ({ id, server: 'oneGet', group: 'ceilings', besideOnly: true, title: `Ceiling: the one-GET route taking ${what}`, baseline: 'one-get', load })
  const source = (id: string, what: string, ceilingId: string, load: LoadSpec): Scenario =>
    ({ id, server: 'service', group: 'authenticate', paired: [ceilingId, 'jwt'], title: `Authenticate, ${what}`, baseline: ceilingId, load })

  return [
    { id: 'bare', server: 'bare', group: 'baselines', title: 'Bare Fastify route, small JSON', load: { url: `${origins.bare}/`, expectedStatuses: [200] } },
    { id: 'one-get', server: 'oneGet', group: 'baselines', title: 'Fastify route, one ioredis GET', baseline: 'bare', load: { url: `${origins.oneGet}/`, expectedStatuses: [200] } },
    { id: 'aa-one-get', server: 'oneGetTwin', group: 'baselines', paired: ['one-get'], title: 'A/A check: a second one-GET server, same code', baseline: 'one-get', load: { url: `${origins.oneGetTwin}/`, expectedStatuses: [200] } },
    { id: 'jwt', server: 'jwt', group: 'baselines', title: 'Peer: @fastify/jwt HS256 verify', baseline: 'one-get', load: { url: `${origins.jwt}/`, headers: { authorization: `Bearer ${context.jwtToken}` }, expectedStatuses: [200] } },
    { id: 'argon2', server: 'argon2', group: 'baselines', minSeconds: 1, title: `Raw verify, node-argon2${ownArgon2 === 'argon2' ? ' (ceiling of Login)' : ''}`, load: { url: `${origins.argon2}/`, method: 'POST', expectedStatuses: [200] } },
    { id: 'argon2-node-rs', server: 'argon2NodeRs', group: 'baselines', minSeconds: 1, title: `Raw verify, @node-rs/argon2${ownArgon2 === 'argon2-node-rs' ? ' (ceiling of Login)' : ''}`, baseline: 'argon2', load: { url: `${origins.argon2NodeRs}/`, method: 'POST', expectedStatuses: [200] } },

    ceiling('one-get-path-get', 'GET /auth/Authenticate/{token}', shapes['path-get'](oneGetAuthenticate)),
    ceiling('one-get-path-post', 'POST /auth/Authenticate/{token}', shapes['path-post'](oneGetAuthenticate)),
    ceiling('one-get-query', 'GET /auth/Authenticate?token=', shapes.query(oneGetAuthenticate)),
    ceiling('one-get-form', 'POST /auth/Authenticate with the form body token=', shapes.form(oneGetAuthenticate)),
    ceiling('one-get-cookie-get', 'GET /auth/Authenticate with the cookie', shapes['cookie-get'](oneGetAuthenticate)),
    ceiling('one-get-cookie-post', 'POST /auth/Authenticate with the cookie, no body', shapes['cookie-post'](oneGetAuthenticate)),
    ceiling('one-get-verify-bearer', 'GET /auth/verify with Authorization: Bearer', { url: `${origins.oneGet}/auth/verify`, headers: bearer, expectedStatuses: [200] }),
    { id: 'orders-unguarded', server: 'ordersUnguarded', group: 'ceilings', besideOnly: true, title: 'Ceiling: orders-service GET /orders without the guard', baseline: 'bare', load: { url: `${origins.ordersUnguarded}/orders`, headers: bearer, expectedStatuses: [200] } },

    source('auth-path-get', 'token in path, GET', 'one-get-path-get', shapes['path-get'](authenticate)),
    source('auth-path-post', 'token in path, POST', 'one-get-path-post', shapes['path-post'](authenticate)),
    source('auth-query-get', 'token in query, GET', 'one-get-query', authenticateQuery),
    source('auth-form-post', 'token in form body, POST', 'one-get-form', shapes.form(authenticate)),
    source('auth-cookie-get', 'token in cookie, GET', 'one-get-cookie-get', shapes['cookie-get'](authenticate)),
    source('auth-cookie-post', 'token in cookie, POST', 'one-get-cookie-post', shapes['cookie-post'](authenticate)),
    // Forward-auth as a gateway asks it: one store read, like Authenticate, answered in onRequest.
    { id: 'verify-bearer', server: 'service', group: 'authenticate', paired: ['one-get-verify-bearer', 'jwt'], title: 'Forward-auth /auth/verify, Bearer, GET', baseline: 'one-get-verify-bearer', load: { url: `${origins.service}/auth/verify`, headers: bearer, expectedStatuses: [200] } },
    // Tracing's cost: the same request to the same build with OTEL_EXPORTER_OTLP_ENDPOINT set,
    // against the service without it, run side by side.
    { id: 'auth-traced', server: 'serviceTraced', group: 'authenticate', unsliced: true, paired: ['auth-query-get'], title: 'Authenticate (query, GET), tracing on (OTLP to a local sink)', baseline: 'auth-query-get', load: { url: `${origins.serviceTraced}/auth/Authenticate?token=${token}`, expectedStatuses: [200] } },
    // Authenticate by API key against Authenticate by token: the same request shape and ceiling,
    // and auth-query-get's slices taken in turns with its own, so that their CPU ratio is a same-seconds one.
    { id: 'auth-key', server: 'service', group: 'authenticate', paired: ['one-get-query', 'auth-query-get'], title: 'Authenticate by API key, key in query, GET', baseline: 'one-get-query', load: { url: `${authenticate}?token=${context.apiKey}`, expectedStatuses: [200] } },
    // Groups ride in the token's record, read by the same one Redis read: an account in 20 groups against
    // auth-query-get's (in none), the same request shape and ceiling, their slices taken in turns.
    { id: 'auth-groups', server: 'service', group: 'authenticate', paired: ['one-get-query', 'auth-query-get'], title: 'Authenticate of an account with 20 groups, token in query, GET', baseline: 'one-get-query', load: { url: `${authenticate}?token=${context.groupsToken}`, expectedStatuses: [200] } },
    // The idle timeout's cost: the same request to the same build with AUTH_IDLE_TIMEOUT_SECONDS set
    // (the token's idle key read beside it, touched at most once per slack), against the service without it, in the same slices.
    { id: 'auth-idle', server: 'serviceIdle', group: 'authenticate', paired: ['auth-query-get'], title: 'Authenticate (query, GET), idle timeout on (AUTH_IDLE_TIMEOUT_SECONDS=900)', baseline: 'auth-query-get', load: { url: `${origins.serviceIdle}/auth/Authenticate?token=${context.idleToken}`, expectedStatuses: [200] } },
    // An access token of the OpenID Connect provider is a token of the service (kind oidc, its client in the
    // record): against a Login token's Authenticate, the same request shape and ceiling, their slices taken in turns.
    { id: 'auth-oidc', server: 'service', group: 'authenticate', paired: ['one-get-query', 'auth-query-get'], title: 'Authenticate of an OpenID Connect access token, token in query, GET', baseline: 'one-get-query', load: { url: `${authenticate}?token=${context.oidcAccessToken}`, expectedStatuses: [200] } },
    { id: 'auth-unknown', server: 'service', group: 'authenticate', paired: ['one-get-query'], title: 'Authenticate, unknown token (403)', baseline: 'one-get-query', load: { url: `${authenticate}?token=${context.unknownToken}`, expectedStatuses: [403] } },

    { id: 'login-success', server: 'service', group: 'login', minSeconds: 1, title: 'Login, right password', baseline: ownArgon2, load: loginSpec(context, context.password, 200) },
    { id: 'login-failure', server: 'service', group: 'login', minSeconds: 1, title: 'Login, wrong password (401)', baseline: ownArgon2, load: loginSpec(context, `${context.password}-wrong`, 401) },
    {
      id: 'login-other-binding',
      server: 'serviceOtherBinding',
      group: 'login',
      minSeconds: 1,
      title: `Login, service on ${other === 'node-rs' ? '@node-rs/argon2' : 'node-argon2'} instead`,
      baseline: other === 'node-rs' ? 'argon2-node-rs' : 'argon2',
      load: loginSpec(context, context.password, 200, origins.serviceOtherBinding)
    },
    // Webhooks' cost: the same Logins to the same build with AUTH_WEBHOOK_URL set (an outbox row with
    // each audit row, the device record, the delivery), run right after the service without it. Whole runs, never
    // slices: a slice's Logins still hashing when it ends would meet the next slice's in a full hash queue (503s).
    { id: 'login-webhooks', server: 'serviceWebhooks', group: 'login', minSeconds: 1, unsliced: true, paired: ['login-success'], title: 'Login, right password, webhooks on (a receiver present)', baseline: 'login-success', load: loginSpec(context, context.password, 200, origins.serviceWebhooks) },
    { id: 'logout-login', server: 'service', group: 'login', minSeconds: 1, title: 'Logout + Login cycle (ratio per cycle)', baseline: ownArgon2, requestsPerUnit: 2, load: logoutLoginSpec(context) },

    // The provider's token endpoint, refresh grant (client_secret_basic, rotation): whole runs, never slices (each
    // run's end spends the refresh tokens in flight, which new code grants replace before the next: prepare).
    { id: 'oidc-refresh', server: 'service', group: 'oidc', threads: true, title: 'OpenID Connect token endpoint, refresh grant (ID token RS256)', prepare: async () => { await context.refresh.rs256.pool.fill(2 * context.connections) }, load: refreshSpec(context.refresh.rs256) },
    // The same on a copy of the service whose clients' ID tokens are signed with ES256, run right after oidc-refresh.
    { id: 'oidc-refresh-es256', server: 'serviceOidcEs256', group: 'oidc', threads: true, unsliced: true, paired: ['oidc-refresh'], title: 'OpenID Connect token endpoint, refresh grant (ID token ES256, a copy of the service)', baseline: 'oidc-refresh', prepare: async () => { await context.refresh.es256.pool.fill(2 * context.connections) }, load: refreshSpec(context.refresh.es256) },

    { id: 'guard-direct', server: 'ordersDirect', group: 'guard', paired: ['one-get'], title: 'orders-service GET /orders, guard direct, no cache', baseline: 'one-get', load: { url: `${origins.ordersDirect}/orders`, headers: bearer, expectedStatuses: [200] } },
    { id: 'guard-cached', server: 'ordersCached', group: 'guard', paired: ['orders-unguarded'], title: 'orders-service GET /orders, guard direct, warm cache', baseline: 'orders-unguarded', load: { url: `${origins.ordersCached}/orders`, headers: bearer, expectedStatuses: [200] } },

    // A stall cannot be sliced (the stop lasts a second): the same load with the reader running
    // runs right before and right after it. The storm comes next and takes the run after as its own.
    { id: 'auth-reader-stopped', server: 'service', group: 'logs', minSeconds: 1, stopsLogReader: true, paired: ['auth-query-get'], title: 'Authenticate (query, GET), its log reader stopped mid-run', baseline: 'auth-query-get', load: authenticateQuery },

    {
      id: 'auth-storm',
      server: 'service',
      group: 'storm',
      minSeconds: 1,
      title: 'Authenticate (query, GET) during a login storm',
      baseline: 'auth-query-get',
      paired: ['auth-query-get'],
      load: authenticateQuery,
      background: { id: 'login-storm', title: 'Login storm beside it', baseline: ownArgon2, server: 'service', load: loginSpec(context, context.password, 200) }
    }
  ]
}
