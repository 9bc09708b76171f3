import { reasons } from '../errors/reasons.js'
import { badRequest, StatusError } from '../errors/status.js'
import type { AuditLog } from '../core/stores/audit-log.js'
import type { OutcomeOf } from '../core/events.js'
import type { OidcClientRow, OidcClientStore } from './client-store.js'
import { hashClientSecret, isClientIdShaped, newClientId, newClientSecret } from './client-secret.js'
import { checkedUri, checkedUris } from './client-uris.js'
import type { ClientRemovals } from './client-removals.js'

/**
 * The provider's clients, as operators register them (api-contract, Single sign-on): made with
 * their URLs checked and, for a confidential client, a secret shown once; listed; removed with
 * every token they hold. The provider reads a client as oidc-provider's metadata (metadataOf).
 */

export const noSuchClient = (): StatusError => new StatusError(404, 'Not Found', 404, {}, { detail: reasons.noSuchClient() })
/** What the clients' routes and commands answer while the provider is off (AUTH_OIDC_ISSUER unset): a 404 that says why. */
export const providerOff = (): StatusError => new StatusError(404, 'Not Found', 404, {}, { detail: reasons.oidcOff() })

/** Who asks, for the audit trail: the admin API's caller or the command line. */
export interface ClientActor {
  clientIp?: string | undefined
  userAgent?: string | undefined
  credential?: string | undefined
  /** The signed-in account acting from the admin console. */
  actor?: string | undefined
}

/** A client to register, as the admin API and the command line take it. */
export interface NewClientInput {
  name: string
  redirectUris: readonly string[]
  postLogoutRedirectUris?: readonly string[] | undefined
  /** Default false: a confidential client, given a secret. */
  public?: boolean | undefined
  backchannelLogoutUri?: string | null | undefined
}

export interface CreatedClient {
  client: OidcClientRow
  /** A confidential client's secret, shown this once (nothing keeps it); undefined for a public client. */
  secret: string | undefined
}

/** The grants every client may use: the code flow, refresh, and the device flow for command-line clients. */
export const CLIENT_GRANT_TYPES = ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'] as const

/**
 * A client as oidc-provider takes it (the metadata its Client is made from). `client_secret`
 * is the stored hash, not the secret: the provider hashes what a client presents and compares
 * the two (its compareClientSecret is replaced to do so), so no secret is ever held here.
 */
export interface OidcClientMetadata {
  client_id: string
  client_secret?: string
  client_name: string
  redirect_uris: string[]
  post_logout_redirect_uris: string[]
  token_endpoint_auth_method: 'none' | 'client_secret_basic'
  grant_types: string[]
  response_types: ['code']
  backchannel_logout_uri?: string
  backchannel_logout_session_required: true
}

export interface OidcClients {
  /** Registers a client: a 400 naming the parameter and the rule for a bad name or URL. */
  create (input: NewClientInput, actor: ClientActor): Promise<CreatedClient>
  /** Every client, oldest first. */
  list (): Promise<OidcClientRow[]>
  /**
   * Removes the client and ends every token it holds (`onRemoved`), or a 404. The client is unknown
   * to the provider from the first step; a removal that failed half-way is finished by the next.
   */
  remove (clientId: string, actor: ClientActor): Promise<OidcClientRow>
  /** The client as the provider reads it; undefined when there is none (or its removal has begun). */
  metadataOf (clientId: string): Promise<OidcClientMetadata | undefined>
}

export interface OidcClientsDeps {
  store: OidcClientStore
  audit: AuditLog
  /**
   * Ends every token the client holds (its grants, access and refresh tokens), after the client is
   * marked removed and before its row goes. If it throws, the removal fails (and says so) with the
   * client still marked: unknown to the provider, and ended again by the next removal.
   */
  onRemoved?: ((clientId: string) => Promise<void>) | undefined
  /**
   * Where removals are marked for every instance to see (client-removals.ts). Given, a client read
   * from the database is kept in memory for up to CLIENT_CACHE_MS and served from there while it
   * has no mark (the provider asks for its client at every request); without, every read asks the
   * database.
   */
  removals?: ClientRemovals | undefined
  /** The clock of the memory's lifetimes (tests). */
  now?: () => number
}

/**
 * How long an instance keeps a client it read. Removal needs no expiry (its mark is read at every
 * request); this bounds only what no mark announces: a row changed or deleted by hand in the
 * database, or by an instance of an older version, which sets no mark.
 */
export const CLIENT_CACHE_MS = 30_000

const NAME_MAX = 128
// eslint-disable-next-line no-control-regex -- control characters are what is refused
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

function checkedName (name: string): string {
  const trimmed = name.trim()
  if (trimmed === '' || [...trimmed].length > NAME_MAX || CONTROL.test(trimmed)) throw badRequest(reasons.clientNameNotValid())
  return trimmed
}

export function metadataOfRow (row: OidcClientRow): OidcClientMetadata {
  const metadata: OidcClientMetadata = {
    client_id: row.clientId,
    client_name: row.name,
    redirect_uris: [...row.redirectUris],
    post_logout_redirect_uris: [...row.postLogoutRedirectUris],
    token_endpoint_auth_method: row.public ? 'none' : 'client_secret_basic',
    grant_types: [...CLIENT_GRANT_TYPES],
    response_types: ['code'],
    backchannel_logout_session_required: true
  }
  if (!row.public && row.secretHash !== null) metadata.client_secret = row.secretHash
  if (row.backchannelLogoutUri !== null) metadata.backchannel_logout_uri = row.backchannelLogoutUri
  return metadata
}

export function createOidcClients ({ store, audit, onRemoved, removals, now = Date.now }: OidcClientsDeps): OidcClients {
  const kept = new Map<string, { row: OidcClientRow, until: number }>()
  /** The client's row: from memory while its removal is not marked, else from the database. */
  const rowOf = async (clientId: string): Promise<OidcClientRow | null> => {
    if (removals === undefined) return await store.find(clientId)
    if (await removals.marked(clientId)) {
      kept.delete(clientId)
      return null
    }
    const held = kept.get(clientId)
    if (held !== undefined && held.until > now()) return held.row
    const row = await store.find(clientId)
    if (row === null) kept.delete(clientId)
    else kept.set(clientId, { row, until: now() + CLIENT_CACHE_MS })
    return row
  }

  const record = (event: 'oidc.client_created' | 'oidc.client_removed', outcome: OutcomeOf<typeof event>, actor: ClientActor): void => {
    audit.record({ event, clientIp: actor.clientIp, userAgent: actor.userAgent, credential: actor.credential, actor: actor.actor, outcome })
  }

  return {
    async create (input, actor) {
      const name = checkedName(input.name)
      const redirectUris = checkedUris(input.redirectUris, 'redirect_uris', true)
      const postLogoutRedirectUris = checkedUris(input.postLogoutRedirectUris ?? [], 'post_logout_redirect_uris', false)
      const backchannelLogoutUri = input.backchannelLogoutUri === undefined || input.backchannelLogoutUri === null ? null : checkedUri(input.backchannelLogoutUri, 'backchannel_logout_uri')
      const isPublic = input.public ?? false
      const secret = isPublic ? undefined : newClientSecret()
      const client = await store.create({
        clientId: newClientId(),
        name,
        redirectUris,
        postLogoutRedirectUris,
        public: isPublic,
        backchannelLogoutUri,
        secretHash: secret === undefined ? null : hashClientSecret(secret)
      })
      record('oidc.client_created', `created:${client.clientId}`, actor)
      return { client, secret }
    },
    list: async () => await store.list(),
    async remove (clientId, actor) {
      if (!isClientIdShaped(clientId)) throw noSuchClient()
      // Marked for every instance first (they may hold the client in memory): should this fail,
      // nothing has changed; should a later step fail, the client is unknown all the same.
      // A client never registered gets a mark too: its id is nobody's, and the mark expires.
      await removals?.mark(clientId)
      kept.delete(clientId)
      const removing = await store.markRemoved(clientId)
      if (removing === null) throw noSuchClient()
      // Marked first, so the provider no longer finds the client: no token is given out while
      // the hook ends those it holds.
      await onRemoved?.(clientId)
      await store.deleteRemoved(clientId)
      record('oidc.client_removed', `removed:${clientId}`, actor)
      return removing
    },
    async metadataOf (clientId) {
      if (!isClientIdShaped(clientId)) return undefined
      const row = await rowOf(clientId)
      // Made afresh each time: the provider gets no object another request holds.
      return row === null ? undefined : metadataOfRow(row)
    }
  }
}
