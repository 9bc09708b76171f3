/**
 * A small typed client of the admin API, for the command line (cli/main.ts) and scripts: the
 * account and session commands go through it when a service runs (docs/administration.md).
 * A refusal is an AdminApiError with the answer's status and detail; a network failure is one
 * with status 0. The key travels only in the Authorization header; nothing is logged.
 */

import type { SessionItem } from '../core/schemas.js'
import { PACKAGE_VERSION } from '../config/version.js'

/** What the audit trail records as the user agent of the changes this client makes. */
export const ADMIN_CLIENT_USER_AGENT = `auth-token-service-admin-client/${PACKAGE_VERSION}`

export interface AdminUser {
  username: string
  kind: 'person' | 'service'
  totp: boolean
  federated: boolean
  disabled: boolean
  locked_until: string | null
  created: string
  last_login: string | null
  /** Every group the account is in, sorted: its local groups and those its directory named. */
  groups: string[]
  /** Of those, the ones its directory named at its last Login (a federated account's). */
  directory_groups: string[]
  /** Where recovery and invitation mail goes; null: none. */
  email: string | null
}

/** A group as GET /admin/groups lists it: its name and how many accounts are in it. */
export interface AdminGroup {
  name: string
  members: number
}

/** An API key as the admin API shows it (never its secret). */
export interface AdminKey {
  id: string
  name: string
  created: string
  expiration_date: string
  last_used: string | null
}

/** An OpenID Connect client as the admin API shows it (never its secret). */
export interface AdminOidcClient {
  client_id: string
  name: string
  redirect_uris: string[]
  post_logout_redirect_uris: string[]
  public: boolean
  backchannel_logout_uri: string | null
  created: string
}

/** A client to register, in the admin API's names (POST /admin/oidc/clients). */
export interface NewAdminOidcClient {
  name: string
  redirect_uris: string[]
  post_logout_redirect_uris?: string[]
  public?: boolean
  backchannel_logout_uri?: string
}

export interface AdminEvent {
  time: string
  event: string
  username: string | null
  account_id: string | null
  client_ip: string | null
  user_agent: string | null
  outcome: string
  /** Which credential made an administrative change (`key:<fingerprint>`, `local-cli`); null otherwise. */
  credential: string | null
  /** The account that made an administrative change from the admin console; null otherwise. */
  actor: string | null
}

/** What POST /admin/oidc/keys/rotate answers: the OpenID Connect provider's new signing keys, and those it retired. */
export interface AdminRotatedKeys {
  keys: Array<{ kid: string, alg: string, created: string }>
  /** `readable` false: its private part does not open with the sealing key, and it left the JWKS at once. */
  retired: Array<{ kid: string, alg: string, kept_until: string, readable: boolean }>
}

/** A session as the admin API lists it: the self-service list's item (schemas.ts), `current` false. */
export type AdminSession = SessionItem

export class AdminApiError extends Error {
  readonly status: number
  readonly detail: string | undefined
  constructor (status: number, message: string, detail: string | undefined) {
    super(detail ?? message)
    this.status = status
    this.detail = detail
    this.name = 'AdminApiError'
  }
}

export interface AdminClientOptions {
  /** The internal listener's base URL, e.g. http://127.0.0.1:3001 (a path prefix is kept). */
  url: string
  key: string
  /** Per request; default 30 s (a new password is hashed). */
  timeoutMs?: number
}

export interface AdminClient {
  /** The internal listener it talks to (no key in it). */
  readonly url: string
  addUser (username: string, password: string | undefined, federated: boolean, kind?: 'person' | 'service'): Promise<AdminUser>
  /** The account (GET /admin/users/{username}). */
  user (username: string): Promise<AdminUser>
  changeUser (username: string, change: { disabled?: boolean, password?: string, email?: string | null }): Promise<{ user: AdminUser, ended: number }>
  /** A person's account without a password, invited by email (POST /admin/users with `invite`). */
  inviteUser (username: string, email: string): Promise<AdminUser>
  deleteUser (username: string): Promise<number>
  unlockUser (username: string): Promise<AdminUser>
  /** Removes the account's second factor (DELETE /admin/users/{username}/totp). */
  resetTotp (username: string): Promise<AdminUser>
  /** Every account, page after page. */
  users (): AsyncIterable<AdminUser>
  sessions (username: string): Promise<AdminSession[]>
  revokeSessions (username: string): Promise<number>
  endSession (id: string): Promise<void>
  /** A new API key of the account, and its secret (shown this once). */
  createKey (username: string, name: string, days: number | undefined): Promise<{ key: AdminKey, secret: string }>
  /** The account's live keys, oldest first, page after page. */
  keys (username: string): AsyncIterable<AdminKey>
  revokeKey (id: string): Promise<AdminKey>
  /** Makes `groups` the account's whole set of local groups (PUT /admin/users/{username}/groups). */
  setGroups (username: string, groups: readonly string[]): Promise<AdminUser>
  /** Every group with a member, by name. */
  groups (): Promise<AdminGroup[]>
  /** The audit trail, oldest first, page after page. */
  events (filter: { user?: string | undefined, since?: Date | undefined, event?: string | undefined }): AsyncIterable<AdminEvent>
  /** Registers an OpenID Connect client; a confidential one's secret is in this answer only. */
  addOidcClient (client: NewAdminOidcClient): Promise<{ client: AdminOidcClient, secret: string | undefined }>
  /** Every registered OpenID Connect client, oldest first. */
  oidcClients (): Promise<AdminOidcClient[]>
  /** Removes the client; every token it holds ends. */
  removeOidcClient (clientId: string): Promise<AdminOidcClient>
  /** New signing keys for the OpenID Connect provider (POST /admin/oidc/keys/rotate). */
  rotateSigningKeys (): Promise<AdminRotatedKeys>
}

const PAGE = 1000

export function createAdminClient ({ url, key, timeoutMs = 30_000 }: AdminClientOptions): AdminClient {
  const base = url.endsWith('/') ? url.slice(0, -1) : url
  const user = (username: string): string => `/admin/users/${encodeURIComponent(username)}`

  async function call<T> (method: string, path: string, body?: object): Promise<T> {
    let response: Response
    try {
      response = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'user-agent': ADMIN_CLIENT_USER_AGENT, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
        redirect: 'error'
      })
    } catch (error) {
      const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : error instanceof Error ? error.message : String(error)
      throw new AdminApiError(0, `the admin API at ${base} cannot be reached: ${cause}`, undefined)
    }
    let answer: { status?: unknown, message?: unknown, detail?: unknown }
    try {
      answer = await response.json() as typeof answer
    } catch {
      throw new AdminApiError(response.status, `the admin API at ${base} answered HTTP ${response.status} without a JSON body`, undefined)
    }
    if (!response.ok || answer.status !== 0) {
      const message = typeof answer.message === 'string' ? answer.message : `HTTP ${response.status}`
      throw new AdminApiError(response.status, message, typeof answer.detail === 'string' ? answer.detail : undefined)
    }
    return answer as T
  }

  async function * pages<T> (path: string, field: string, query: URLSearchParams): AsyncIterable<T> {
    let cursor: string | null = null
    do {
      const params = new URLSearchParams(query)
      params.set('limit', String(PAGE))
      if (cursor !== null) params.set('cursor', cursor)
      const page: Record<string, unknown> = await call('GET', `${path}?${params.toString()}`)
      yield * (page[field] as T[])
      cursor = typeof page.next_cursor === 'string' ? page.next_cursor : null
    } while (cursor !== null)
  }

  return {
    url: base,
    addUser: async (username, password, federated, kind) =>
      (await call<{ user: AdminUser }>('POST', '/admin/users', { username, ...(password === undefined ? {} : { password }), federated, ...(kind === undefined ? {} : { kind }) })).user,
    user: async (username) => (await call<{ user: AdminUser }>('GET', user(username))).user,
    inviteUser: async (username, email) => (await call<{ user: AdminUser }>('POST', '/admin/users', { username, email, invite: true })).user,
    async changeUser (username, change) {
      const answer = await call<{ user: AdminUser, sessions_ended: number }>('PATCH', user(username), change)
      return { user: answer.user, ended: answer.sessions_ended }
    },
    deleteUser: async (username) => (await call<{ sessions_ended: number }>('DELETE', user(username))).sessions_ended,
    unlockUser: async (username) => (await call<{ user: AdminUser }>('POST', `${user(username)}/unlock`)).user,
    resetTotp: async (username) => (await call<{ user: AdminUser }>('DELETE', `${user(username)}/totp`)).user,
    users: () => pages<AdminUser>('/admin/users', 'users', new URLSearchParams()),
    sessions: async (username) => (await call<{ sessions: AdminSession[] }>('GET', `${user(username)}/sessions`)).sessions,
    revokeSessions: async (username) => (await call<{ sessions_ended: number }>('DELETE', `${user(username)}/sessions`)).sessions_ended,
    async endSession (id) { await call('DELETE', `/admin/sessions/${encodeURIComponent(id)}`) },
    createKey: async (username, name, days) =>
      await call<{ key: AdminKey, secret: string }>('POST', `${user(username)}/keys`, { name, ...(days === undefined ? {} : { expires_in_days: days }) }),
    keys: (username) => pages<AdminKey>(`${user(username)}/keys`, 'keys', new URLSearchParams()),
    revokeKey: async (id) => (await call<{ key: AdminKey }>('DELETE', `/admin/keys/${encodeURIComponent(id)}`)).key,
    setGroups: async (username, groups) => (await call<{ user: AdminUser }>('PUT', `${user(username)}/groups`, { groups })).user,
    groups: async () => (await call<{ groups: AdminGroup[] }>('GET', '/admin/groups')).groups,
    events (filter) {
      const query = new URLSearchParams()
      if (filter.user !== undefined) query.set('user', filter.user)
      if (filter.since !== undefined) query.set('since', filter.since.toISOString())
      if (filter.event !== undefined) query.set('event', filter.event)
      return pages<AdminEvent>('/admin/events', 'events', query)
    },
    async addOidcClient (client) {
      const answer = await call<{ client: AdminOidcClient, client_secret?: string }>('POST', '/admin/oidc/clients', client)
      return { client: answer.client, secret: answer.client_secret }
    },
    oidcClients: async () => (await call<{ clients: AdminOidcClient[] }>('GET', '/admin/oidc/clients')).clients,
    removeOidcClient: async (clientId) => (await call<{ client: AdminOidcClient }>('DELETE', `/admin/oidc/clients/${encodeURIComponent(clientId)}`)).client,
    async rotateSigningKeys () {
      const { keys, retired } = await call<AdminRotatedKeys>('POST', '/admin/oidc/keys/rotate')
      return { keys, retired }
    }
  }
}
