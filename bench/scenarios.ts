import type autocannon from 'autocannon'
import { accountName } from './lib/accounts.js'
import type { LoadSpec } from './lib/load.js'

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
    /** A copy of the service whose hasher runs on the other argon2 binding. */
    serviceOtherBinding: string
  }
  /** The binding the service's own hasher uses. */
  serviceBinding: Binding
  /** An active token, issued by the service's own Login. */
  token: string
  /** Shaped like a token, never issued. */
  unknownToken: string
  jwtToken: string
  /** Every seeded account's password. */
  password: string
  accounts: number
}

export type Binding = 'argon2' | 'node-rs'

export type Group = 'baselines' | 'authenticate' | 'login' | 'guard' | 'storm'

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
  /** Left out of a default run (which stays under five minutes); runs when `--only` names it, and in the smoke run. */
  optional?: boolean
  /** Requests per unit of work compared with the baseline (Logout + Login: two requests a cycle). */
  requestsPerUnit?: number
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

export function defineScenarios (context: ScenarioContext): Scenario[] {
  const { origins, token } = context
  const authenticate = `${origins.service}/auth/Authenticate`
  const bearer = { authorization: `Bearer ${token}` }
  const cookie = { cookie: `AuthToken1=${token}` }
  const other: Binding = context.serviceBinding === 'argon2' ? 'node-rs' : 'argon2'
  const ownArgon2 = context.serviceBinding === 'argon2' ? 'argon2' : 'argon2-node-rs'
  const authenticateQuery: LoadSpec = { url: `${authenticate}?token=${token}`, expectedStatuses: [200] }

  return [
    { id: 'bare', server: 'bare', group: 'baselines', title: 'Bare Fastify route, small JSON', load: { url: `${origins.bare}/`, expectedStatuses: [200] } },
    { id: 'one-get', server: 'oneGet', group: 'baselines', title: 'Fastify route, one ioredis GET (ceiling of Authenticate)', baseline: 'bare', load: { url: `${origins.oneGet}/`, expectedStatuses: [200] } },
    { id: 'aa-one-get', server: 'oneGetTwin', group: 'baselines', paired: ['one-get'], title: 'A/A check: a second one-GET server, same code', baseline: 'one-get', load: { url: `${origins.oneGetTwin}/`, expectedStatuses: [200] } },
    { id: 'jwt', server: 'jwt', group: 'baselines', title: 'Peer: @fastify/jwt HS256 verify', baseline: 'one-get', load: { url: `${origins.jwt}/`, headers: { authorization: `Bearer ${context.jwtToken}` }, expectedStatuses: [200] } },
    { id: 'one-get-form', server: 'oneGet', group: 'baselines', optional: true, paired: ['one-get'], title: 'The one-GET route taking a form POST (auth-form-post\'s body)', baseline: 'one-get', load: { url: `${origins.oneGet}/`, method: 'POST', headers: FORM, body: `token=${token}`, expectedStatuses: [200] } },
    { id: 'argon2', server: 'argon2', group: 'baselines', title: `Raw verify, node-argon2${ownArgon2 === 'argon2' ? ' (ceiling of Login)' : ''}`, load: { url: `${origins.argon2}/`, method: 'POST', expectedStatuses: [200] } },
    { id: 'argon2-node-rs', server: 'argon2NodeRs', group: 'baselines', title: `Raw verify, @node-rs/argon2${ownArgon2 === 'argon2-node-rs' ? ' (ceiling of Login)' : ''}`, baseline: 'argon2', load: { url: `${origins.argon2NodeRs}/`, method: 'POST', expectedStatuses: [200] } },

    { id: 'auth-path-get', server: 'service', group: 'authenticate', paired: ['one-get', 'jwt'], title: 'Authenticate, token in path, GET', baseline: 'one-get', load: { url: `${authenticate}/${token}`, expectedStatuses: [200] } },
    { id: 'auth-path-post', server: 'service', group: 'authenticate', paired: ['one-get', 'jwt'], title: 'Authenticate, token in path, POST', baseline: 'one-get', load: { url: `${authenticate}/${token}`, method: 'POST', expectedStatuses: [200] } },
    { id: 'auth-query-get', server: 'service', group: 'authenticate', paired: ['one-get', 'jwt'], title: 'Authenticate, token in query, GET', baseline: 'one-get', load: authenticateQuery },
    { id: 'auth-form-post', server: 'service', group: 'authenticate', paired: ['one-get', 'jwt', 'one-get-form'], title: 'Authenticate, token in form body, POST', baseline: 'one-get', load: { url: authenticate, method: 'POST', headers: FORM, body: `token=${token}`, expectedStatuses: [200] } },
    { id: 'auth-cookie-get', server: 'service', group: 'authenticate', paired: ['one-get', 'jwt'], title: 'Authenticate, token in cookie, GET', baseline: 'one-get', load: { url: authenticate, headers: cookie, expectedStatuses: [200] } },
    { id: 'auth-cookie-post', server: 'service', group: 'authenticate', paired: ['one-get', 'jwt'], title: 'Authenticate, token in cookie, POST', baseline: 'one-get', load: { url: authenticate, method: 'POST', headers: cookie, expectedStatuses: [200] } },
    { id: 'auth-unknown', server: 'service', group: 'authenticate', paired: ['one-get'], title: 'Authenticate, unknown token (403)', baseline: 'one-get', load: { url: `${authenticate}?token=${context.unknownToken}`, expectedStatuses: [403] } },

    { id: 'login-success', server: 'service', group: 'login', title: 'Login, right password', baseline: ownArgon2, load: loginSpec(context, context.password, 200) },
    { id: 'login-failure', server: 'service', group: 'login', title: 'Login, wrong password (401)', baseline: ownArgon2, load: loginSpec(context, `${context.password}-wrong`, 401) },
    {
      id: 'login-other-binding',
      server: 'serviceOtherBinding',
      group: 'login',
      title: `Login, service on ${other === 'node-rs' ? '@node-rs/argon2' : 'node-argon2'} instead`,
      baseline: other === 'node-rs' ? 'argon2-node-rs' : 'argon2',
      load: loginSpec(context, context.password, 200, origins.serviceOtherBinding)
    },
    { id: 'logout-login', server: 'service', group: 'login', title: 'Logout + Login cycle (ratio per cycle)', baseline: ownArgon2, requestsPerUnit: 2, load: logoutLoginSpec(context) },

    { id: 'guard-direct', server: 'ordersDirect', group: 'guard', paired: ['one-get'], title: 'orders-service GET /orders, guard direct, no cache', baseline: 'one-get', load: { url: `${origins.ordersDirect}/orders`, headers: bearer, expectedStatuses: [200] } },
    { id: 'guard-cached', server: 'ordersCached', group: 'guard', paired: ['bare'], title: 'orders-service GET /orders, guard direct, warm cache', baseline: 'bare', load: { url: `${origins.ordersCached}/orders`, headers: bearer, expectedStatuses: [200] } },

    {
      id: 'auth-storm',
      server: 'service',
      group: 'storm',
      title: 'Authenticate (query, GET) during a login storm',
      baseline: 'auth-query-get',
      paired: ['auth-query-get'],
      load: authenticateQuery,
      background: { id: 'login-storm', title: 'Login storm beside it', baseline: ownArgon2, server: 'service', load: loginSpec(context, context.password, 200) }
    }
  ]
}
