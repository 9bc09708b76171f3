import type { Database } from '../db/database.js'
import { databaseGuard } from '../db/guarded.js'

/** An OpenID Connect client as Postgres keeps it (sql/014-oidc-clients.sql): never its secret, only the secret's hash. */
export interface OidcClientRow {
  clientId: string
  name: string
  redirectUris: string[]
  postLogoutRedirectUris: string[]
  /** A public client (a browser app, a command line) has no secret and must use PKCE. */
  public: boolean
  backchannelLogoutUri: string | null
  /** SHA-256 hex of a confidential client's secret; null for a public client. */
  secretHash: string | null
  createdAt: Date
}

export type NewOidcClient = Omit<OidcClientRow, 'createdAt'>

/** One implementation for Postgres and PGlite, as the user store. */
export interface OidcClientStore {
  create (client: NewOidcClient): Promise<OidcClientRow>
  /** Every registered client not being removed, oldest first. */
  list (): Promise<OidcClientRow[]>
  /** The client, or null when there is none or its removal has begun: the provider knows it no longer. */
  find (clientId: string): Promise<OidcClientRow | null>
  /**
   * The first step of a removal: the client marked removed (find no longer answers it), or null
   * when no such client is registered. A client an earlier removal marked and failed to finish is
   * answered too, so that the next removal finishes it.
   */
  markRemoved (clientId: string): Promise<OidcClientRow | null>
  /** The last step: the marked row deleted once the client's tokens have ended. */
  deleteRemoved (clientId: string): Promise<void>
}

interface Row {
  client_id: string
  name: string
  redirect_uris: string[]
  post_logout_redirect_uris: string[]
  public: boolean
  backchannel_logout_uri: string | null
  secret_hash: string | null
  created_at: Date | string
}

const toRow = (row: Row): OidcClientRow => ({
  clientId: row.client_id,
  name: row.name,
  redirectUris: row.redirect_uris,
  postLogoutRedirectUris: row.post_logout_redirect_uris,
  public: row.public,
  backchannelLogoutUri: row.backchannel_logout_uri,
  secretHash: row.secret_hash,
  createdAt: new Date(row.created_at)
})

const COLUMNS = 'client_id, name, redirect_uris, post_logout_redirect_uris, public, backchannel_logout_uri, secret_hash, created_at'

export function createSqlOidcClientStore (db: Pick<Database, 'query'>, onError?: (error: unknown) => void): OidcClientStore {
  const guarded = databaseGuard(onError)
  const rows = async (sql: string, params: unknown[]): Promise<OidcClientRow[]> => (await db.query<Row>(sql, params)).rows.map(toRow)

  return {
    create: async (client) => await guarded(async () => {
      const [made] = await rows(
        `INSERT INTO oidc_clients (client_id, name, redirect_uris, post_logout_redirect_uris, public, backchannel_logout_uri, secret_hash)
         VALUES ($1, $2, $3::text[], $4::text[], $5, $6, $7) RETURNING ${COLUMNS}`,
        [client.clientId, client.name, client.redirectUris, client.postLogoutRedirectUris, client.public, client.backchannelLogoutUri, client.secretHash])
      if (made === undefined) throw new Error('INSERT … RETURNING returned no row')
      return made
    }),
    list: async () => await guarded(async () => await rows(`SELECT ${COLUMNS} FROM oidc_clients WHERE removed_at IS NULL ORDER BY created_at, client_id`, [])),
    find: async (clientId) => await guarded(async () => (await rows(`SELECT ${COLUMNS} FROM oidc_clients WHERE client_id = $1 AND removed_at IS NULL`, [clientId]))[0] ?? null),
    markRemoved: async (clientId) => await guarded(async () => (await rows(
      `UPDATE oidc_clients SET removed_at = coalesce(removed_at, now()) WHERE client_id = $1 RETURNING ${COLUMNS}`, [clientId]))[0] ?? null),
    deleteRemoved: async (clientId) => {
      await guarded(async () => await db.query('DELETE FROM oidc_clients WHERE client_id = $1 AND removed_at IS NOT NULL', [clientId]))
    }
  }
}
