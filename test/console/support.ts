import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import type { Test } from 'tap'
import type { Config } from '../../src/config/config.js'
import { buildTestApp, fixtureAccounts, type BackendKind, type TestApp } from '../support/app.js'

/*
 * What the console's tests share: the service with an admin (root, in `admins`), a person
 * (alice, in no group), and a browser's requests: the AuthToken1 cookie of a Login, forms posted
 * as a browser posts them (urlencoded, from the service's own origin).
 */

export const PASSWORD = 'pw'
export const ORIGIN = 'http://localhost'

export interface ConsoleSetup {
  app: FastifyInstance
  testApp: TestApp
  /** root's cookie header (signed in, in admins). */
  admin: string
  /** alice's cookie header (signed in, in no group). */
  person: string
  /** alice's Login token. */
  personToken: string
}

export async function login (app: FastifyInstance, username: string, password = PASSWORD): Promise<string> {
  const response = await app.inject({ method: 'POST', url: '/auth/Login', payload: { username, password } })
  const body = response.json<{ status: number, token?: string }>()
  if (body.token === undefined) throw new Error(`no token for ${username}: ${response.body}`)
  return body.token
}

export const cookie = (token: string): string => `AuthToken1=${token}`

export async function setUp (t: Test, kind: BackendKind = 'real', overrides: Partial<Config> = {}): Promise<ConsoleSetup> {
  const testApp = await buildTestApp(t, kind, overrides)
  const { app } = testApp
  const accounts = fixtureAccounts(app)
  await accounts.add('root', PASSWORD, false)
  await accounts.setGroups('root', ['admins'])
  await accounts.add('alice', PASSWORD, false)
  const personToken = await login(app, 'alice')
  return { app, testApp, admin: cookie(await login(app, 'root')), person: cookie(personToken), personToken }
}

/** A form posted from the console's own page: same origin, as a browser sends it. */
export async function postForm (app: FastifyInstance, url: string, cookieHeader: string, fields: Record<string, string> = {}, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return await app.inject({
    method: 'POST',
    url,
    headers: { cookie: cookieHeader, 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN, 'sec-fetch-site': 'same-origin', ...headers },
    payload: new URLSearchParams(fields).toString()
  })
}

export async function getPage (app: FastifyInstance, url: string, cookieHeader?: string): Promise<LightMyRequestResponse> {
  return await app.inject({ method: 'GET', url, headers: cookieHeader === undefined ? {} : { cookie: cookieHeader } })
}

/** The audit events written so far of this kind about these accounts (flushed first). */
export async function events (app: FastifyInstance, event: string, usernames: readonly string[] = ['alice']): Promise<Array<{ username?: string | undefined, actor?: string | undefined, credential?: string | undefined, outcome: string }>> {
  await app.backends.audit.flush()
  return (await app.backends.audit.list({ event })).filter((found) => found.username !== undefined && usernames.includes(found.username))
}
