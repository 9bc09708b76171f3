import type { AdminEvent, AdminGroup, AdminKey, AdminOidcClient, AdminRotatedKeys, AdminSession, NewAdminOidcClient } from '../admin/client.js'

/**
 * What the account and session commands need of the service, whoever answers: the running
 * service's admin API (adapters/admin-api.ts) or the database and stores opened in this process
 * (adapters/in-process.ts). Sessions and events come in the admin API's shapes (admin/views.ts
 * makes them from the stores for both), so each command prints them one way (commands.ts).
 */
export interface AdminOperations {
  /** Refuses before a password is read when the command cannot run, so it is not typed in vain. */
  beforePassword (): Promise<void>
  /** No password: a federated account only the directory can check, or a service account (API keys only). */
  addUser (username: string, password: string | undefined, federated: boolean, kind?: 'person' | 'service'): Promise<AccountSummary>
  setPassword (username: string, password: string): Promise<Ended>
  setDisabled (username: string, disabled: boolean): Promise<Ended>
  unlockUser (username: string): Promise<{ username: string }>
  /** Removes the account's second factor. */
  resetTotp (username: string): Promise<{ username: string }>
  /** The address recovery mail goes to. */
  setEmail (username: string, email: string): Promise<{ username: string }>
  /** A person's account without a password, and an invitation mailed to `email` (a link to set the first one). */
  inviteUser (username: string, email: string): Promise<{ username: string }>
  deleteUser (username: string): Promise<Ended>
  /** Every account, in username order. */
  users (): AsyncIterable<AccountSummary>
  /** The account's active sessions, newest first. */
  sessions (username: string): Promise<AdminSession[]>
  revokeSessions (username: string): Promise<Ended>
  /** A new API key of the account and its secret (shown once). */
  createKey (username: string, name: string, days: number | undefined): Promise<{ key: AdminKey, secret: string }>
  /** The account's live keys, oldest first (page after page). */
  keys (username: string): AsyncIterable<AdminKey>
  revokeKey (id: string): Promise<AdminKey>
  /** The account's groups. */
  accountGroups (username: string): Promise<AccountGroups>
  /**
   * Reads the account's groups, then makes what `change` answers for them its whole set of local
   * groups (the admin API sets the set as a whole); `change` may throw to change nothing.
   */
  changeLocalGroups (username: string, change: (now: AccountGroups) => readonly string[]): Promise<{ before: AccountGroups, after: AccountGroups }>
  /** Every group with a member, by name, with its number of members. */
  groups (): Promise<AdminGroup[]>
  /** The audit trail, oldest first. */
  events (filter: { user: string | undefined, since: Date | undefined }): AsyncIterable<AdminEvent>
  /** Registers an OpenID Connect client: a confidential one's secret is answered this once. */
  addOidcClient (client: NewAdminOidcClient): Promise<{ client: AdminOidcClient, secret: string | undefined }>
  /** Every registered OpenID Connect client, oldest first. */
  oidcClients (): Promise<AdminOidcClient[]>
  /** Removes the client; every token it holds ends. */
  removeOidcClient (clientId: string): Promise<AdminOidcClient>
  /** New signing keys for the OpenID Connect provider; the current ones retired. */
  rotateSigningKeys (): Promise<AdminRotatedKeys>
}

/** An account as the commands show it. */
export interface AccountSummary {
  username: string
  kind: 'person' | 'service'
  federated: boolean
  disabled: boolean
}

/** An account's groups as the commands show them: every one, and those of them its directory named. */
export interface AccountGroups {
  username: string
  /** Sorted; local and directory groups alike. */
  groups: readonly string[]
  /** Of `groups`, those a federated account's directory named at its last Login. */
  directoryGroups: readonly string[]
}

/** What a change did: the account's name as the answer gives it, and how many of its tokens ended. */
export interface Ended {
  username: string
  ended: number
}
