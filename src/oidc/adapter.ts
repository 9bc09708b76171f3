import type { Adapter, AdapterPayload } from 'oidc-provider'
import { hashToken, isTokenShaped } from '@auth-token-service/protocol/token'
import { idDigest, type ArtifactStore } from './artifact-store.js'

/*
 * oidc-provider's storage (its Adapter), over the service's own stores:
 *   AccessToken   the service's token (its id is one: token-ids.ts): the record Authenticate,
 *                 /auth/verify, introspection and guards read, written under the sign-in token the
 *                 provider's session came from (access-tokens.ts); its provider payload beside it.
 *   Client        the registered clients (Postgres), read only: no dynamic registration.
 *   every other   an expiring key each (ArtifactStore), with the indexes the provider needs: a
 *                 grant's members (revokeByGrantId), a session's uid, a device code's user code.
 * Known pitfalls of adapters, each a test (test/oidc/adapter.test.ts): a grant index that never
 * expires (it expires with its longest member), revokeByGrantId that does nothing (it ends every
 * member, access tokens through the token store, so guards hear of it), and a consumed refresh token
 * deleted (it is kept, marked, until it expires: reuse is how the provider detects a stolen one and
 * ends its grant).
 */

/** Where access tokens live: the service's token store, under the sign-in token their session came from. */
export interface AccessTokenRecords {
  /** False when the sign-in session the token comes from has ended (no token then). */
  issue (token: string, payload: AdapterPayload, ttlSeconds: number): Promise<boolean>
  /** Whether the token's record is active. */
  active (token: string): Promise<boolean>
  /** Ends tokens by their hashes (deleted, denied, announced). */
  end (tokenHashes: readonly string[]): Promise<void>
}

/** Whether the sign-in session a provider session (by uid) stands on is still active (sign-in-links.ts). */
export type SessionAlive = (sessionUid: string) => Promise<boolean>

export interface AdapterDeps {
  store: ArtifactStore
  /** Key prefix (AUTH_REDIS_KEY_PREFIX's, then `oidc:`). */
  prefix: string
  accessTokens: AccessTokenRecords
  sessionAlive: SessionAlive
  /** A registered client's metadata, or undefined. */
  client: (clientId: string) => Promise<AdapterPayload | undefined>
  /** Raised when an adapter call finds an error in its arguments (never a secret in it). */
  invalid: (message: string) => Error
}

/** Models whose payloads carry a grantId: revokeByGrantId ends them all. */
const GRANTABLE = new Set(['AccessToken', 'AuthorizationCode', 'RefreshToken', 'DeviceCode', 'BackchannelAuthenticationRequest'])
/** Models issued to a session: found only while the sign-in session under it lives. */
const SESSION_BOUND = new Set(['AuthorizationCode', 'RefreshToken'])

interface Stored extends AdapterPayload { consumed?: number }

function parse (value: string | null): Stored | undefined {
  if (value === null) return undefined
  const parsed: unknown = JSON.parse(value)
  return typeof parsed === 'object' && parsed !== null ? parsed as Stored : undefined
}

export function createAdapterFactory (deps: AdapterDeps): (name: string) => Adapter {
  const { store, prefix, accessTokens, sessionAlive } = deps
  const grantKey = (grantId: string): string => `${prefix}grant:${idDigest(grantId)}`
  const uidKey = (uid: string): string => `${prefix}uid:${idDigest(uid)}`
  const userCodeKey = (code: string): string => `${prefix}usercode:${idDigest(code)}`

  return (name) => {
    /** An access token is named by its hash as the token store names it; the rest by their ids' digests. */
    const keyOf = (id: string): string => {
      if (name !== 'AccessToken') return `${prefix}${name}:${idDigest(id)}`
      if (!isTokenShaped(id)) throw deps.invalid('an access token that is not one of this service\'s')
      return `${prefix}${name}:${hashToken(id)}`
    }
    const read = async (id: string): Promise<Stored | undefined> => {
      const payload = parse(await store.get(keyOf(id)))
      // The id is kept out of the stored payload (a secret); the provider reads it back in it.
      return payload === undefined ? undefined : { ...payload, jti: id }
    }
    const adapter: Adapter = {
      async upsert (id, payload, expiresIn) {
        const ttlSeconds = expiresIn ?? 0
        if (ttlSeconds <= 0) throw deps.invalid(`${name} stored without a lifetime`)
        if (name === 'AccessToken' && !await accessTokens.issue(id, payload, ttlSeconds)) {
          throw deps.invalid('the sign-in session this token comes from has ended')
        }
        const { jti: _jti, ...kept } = payload
        const key = keyOf(id)
        const ttlMs = ttlSeconds * 1000
        // Sent together (one round trip; each names one key, as a Cluster needs). Should one fail, the
        // upsert fails and the provider hands out nothing: a payload or index entry written meanwhile
        // names an artifact no client holds, and expires with it.
        const writes = [store.set(key, JSON.stringify(kept), ttlMs)]
        if (GRANTABLE.has(name) && typeof payload.grantId === 'string') writes.push(store.addMember(grantKey(payload.grantId), key, ttlMs))
        if (name === 'Session' && typeof payload.uid === 'string') writes.push(store.set(uidKey(payload.uid), id, ttlMs))
        if (typeof payload.userCode === 'string') writes.push(store.set(userCodeKey(payload.userCode), id, ttlMs))
        await Promise.all(writes)
      },
      async find (id) {
        if (name === 'Client') return await deps.client(id)
        if (name === 'AccessToken' && !isTokenShaped(id)) return undefined
        const payload = await read(id)
        if (payload === undefined) return undefined
        if (name === 'AccessToken' && !await accessTokens.active(id)) return undefined
        // A code or refresh token outlives nothing of its sign-in session: ended there, it is gone here.
        if (SESSION_BOUND.has(name) && typeof payload.sessionUid === 'string' && !await sessionAlive(payload.sessionUid)) return undefined
        return payload
      },
      async findByUid (uid) {
        const id = await store.get(uidKey(uid))
        return id === null ? undefined : await read(id)
      },
      async findByUserCode (userCode) {
        const id = await store.get(userCodeKey(userCode))
        return id === null ? undefined : await read(id)
      },
      async consume (id) {
        // Kept, marked (in one step, its expiry kept): a second use is how a stolen code or refresh token is found out.
        await store.markConsumed(keyOf(id), Date.now() / 1000)
      },
      async destroy (id) {
        const key = keyOf(id)
        const payload = parse(await store.get(key))
        if (name === 'AccessToken') await accessTokens.end([hashToken(id)])
        await store.del([key])
        if (payload === undefined) return
        if (GRANTABLE.has(name) && typeof payload.grantId === 'string') await store.removeMember(grantKey(payload.grantId), key)
        if (name === 'Session' && typeof payload.uid === 'string') await store.del([uidKey(payload.uid)])
        if (typeof payload.userCode === 'string') await store.del([userCodeKey(payload.userCode)])
      },
      async revokeByGrantId (grantId) {
        const index = grantKey(grantId)
        const members = await store.members(index)
        const accessTokenPrefix = `${prefix}AccessToken:`
        const hashes = members.filter((key) => key.startsWith(accessTokenPrefix)).map((key) => key.slice(accessTokenPrefix.length))
        // The service's tokens first: denied and announced, so no guard serves one after this returns.
        if (hashes.length > 0) await accessTokens.end(hashes)
        await store.del([...members, index])
      }
    }
    return adapter
  }
}
