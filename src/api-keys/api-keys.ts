import { reasons } from '../errors/reasons.js'
import { badRequest, StatusError, UnavailableError } from '../errors/status.js'
import type { AuditLog } from '../core/stores/audit-log.js'
import type { ApiKeyRecords } from '../core/stores/api-key-records.js'
import type { ApiKeyRow, ApiKeyStore } from './store.js'
import { createRecoveryBudget } from './recovery-budget.js'
import type { TokenRecord } from '@auth-token-service/protocol/layout'
import type { UserRecord } from '../core/stores/user-store.js'
import type { OutcomeOf } from '../core/events.js'
import type { KeysEndedBy } from '../core/ports.js'
import { generateApiKey, hashApiKey, isKeyIdShaped, newKeyId } from '../core/api-key-secret.js'

/**
 * API keys over Postgres (what a key is: api_keys) and the token store (whether it
 * works now: its record, expiring with it). Postgres is written first when a key is made and
 * when it ends, so the record Redis holds is never more alive than the row: a record Redis lost
 * is re-seeded from a live row only (recover), and an ended key's hash is denied in Redis
 * before its revocation is acknowledged, so a re-seed in flight cannot bring it back.
 */

export const DEFAULT_KEY_DAYS = 90
export const DEFAULT_KEYS_PER_ACCOUNT = 50
const DAY_MS = 86_400_000

export const noSuchKey = (): StatusError => new StatusError(404, 'Not Found', 404, {}, { detail: reasons.noSuchKey() })
export const accountDisabled = (): StatusError => new StatusError(409, 'Conflict', 409, {}, { detail: reasons.accountDisabled() })

/** Who asks, for the audit trail: the admin API's caller, the command line, or the account itself. */
export interface KeyActor {
  clientIp?: string | undefined
  userAgent?: string | undefined
  credential?: string | undefined
  /** The signed-in account acting from the admin console. */
  actor?: string | undefined
}

/** A page of an account's live keys; `next`: the id the next page starts after, if there is one. */
export interface KeyPage {
  keys: ApiKeyRow[]
  next: string | undefined
}

export interface CreatedKey {
  key: ApiKeyRow
  /** Shown once: nothing keeps it. */
  secret: string
}

export interface ApiKeys {
  /**
   * A new key of the account, valid `days` days (default 90, at most the configured maximum);
   * a 400 when the account holds its most live keys already (`maxPerAccount`).
   */
  create (account: UserRecord, name: string, days: number | undefined, actor: KeyActor): Promise<CreatedKey>
  /** A page of the account's live keys, oldest first: at most `limit`, after the key `afterId`. */
  page (accountId: string, afterId: string | undefined, limit: number): Promise<KeyPage>
  /**
   * Ends the key `id`: marked ended in Postgres, then ended in the token store (deny set and
   * revocation feed). With `ownerId`, only a key of that account: any other is noSuchKey, as an
   * unknown one. An ended key is ended again in the store (a retry after a 503 finishes the job).
   */
  revoke (id: string, actor: KeyActor, ownerId?: string): Promise<ApiKeyRow>
  /**
   * Ends every live key of the account (disable, revoke-all, delete) in one step each: one
   * Postgres UPDATE, then the token store's batch (endKeys: one acknowledgement wait), so an
   * account with many keys ends them in about the time of one. Returns how many it ended.
   */
  endAccount (account: { id: string, username: string }, actor: KeyActor, why: KeysEndedBy): Promise<number>
  /**
   * Authenticate found no record for this key hash: the record re-seeded from a live row, or
   * null when Postgres has no live key of that hash. Bounded per client (see createApiKeys):
   * random `atsk_` strings cannot drive Postgres, nor spend another client's look-ups. A client
   * whose look-ups are spent gets a 503 with Retry-After, never the null of an unknown key: the
   * key may exist.
   */
  recover (keyHash: string, client: string): Promise<TokenRecord | null>
  /** The hashes of the account's live keys: a change of its groups rewrites their records (core/groups.ts). */
  liveKeyHashes (accountId: string): Promise<string[]>
  /** A key was used: noted in memory, written at most once a minute per key (last_used). */
  used (keyId: string): void
  /** Writes the uses noted so far. */
  flush (): Promise<void>
  close (): Promise<void>
}

export interface ApiKeysDeps {
  store: ApiKeyStore
  tokens: ApiKeyRecords
  audit: AuditLog
  maxDays: number
  /** Live keys an account may hold (AUTH_API_KEYS_PER_ACCOUNT; default 50). */
  maxPerAccount?: number
  now?: () => number
  /** Postgres look-ups a second each client's misses may make (default 5), and the most at once (default 10). */
  recoverPerSecond?: number
  recoverBurst?: number
  /** Clients whose look-ups are tracked at once (default 10,000; the least recent is forgotten). */
  recoverClients?: number
  /** Look-ups in flight at once, across all clients (default 32): the bound on Postgres whoever asks. */
  recoverInFlight?: number
  /** How long a hash Postgres did not know is answered from memory (default 60 s). */
  negativeTtlMs?: number
  /** How often noted uses are written (default 60 s; 0: only on flush). */
  flushEveryMs?: number
}

const NAME_MAX = 128
// eslint-disable-next-line no-control-regex -- control characters are what is refused
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

function checkedName (name: string): string {
  const trimmed = name.trim()
  if (trimmed === '' || [...trimmed].length > NAME_MAX || CONTROL.test(trimmed)) throw badRequest(reasons.apiKeyNameNotValid())
  return trimmed
}

/** The record a key's row stands for (what the token store keeps for it). */
export function keyRecord (row: ApiKeyRow): TokenRecord {
  const record: TokenRecord = { accountId: row.accountId, username: row.username, federated: false, expiresAt: row.expiresAt.getTime(), keyId: row.id }
  if (row.groups.length > 0) record.groups = row.groups
  return record
}

const NEGATIVE_MAX = 10_000

/** Keys ended shortly before a revoke-all that it ends again in the token store (see ApiKeyStore.endAccount). */
const ENDED_AGAIN_MS = 15 * 60_000

/** A client's look-ups are spent (or every look-up slot is taken): the key may exist, so no 403. */
const recoveryBusy = (): UnavailableError => new UnavailableError('key-recovery', undefined, { 'retry-after': '1' })

export function createApiKeys ({
  store, tokens, audit, maxDays, maxPerAccount = DEFAULT_KEYS_PER_ACCOUNT, now = Date.now,
  recoverPerSecond = 5, recoverBurst = 10, recoverClients = 10_000, recoverInFlight = 32, negativeTtlMs = 60_000, flushEveryMs = 60_000
}: ApiKeysDeps): ApiKeys {
  const record = (event: 'key.created' | 'key.revoked', row: ApiKeyRow, actor: KeyActor, outcome: 'created' | 'revoked' | 'already-ended' | KeysEndedBy | `${KeysEndedBy}-incomplete`): void => {
    audit.record({ event, username: row.username, accountId: row.accountId, clientIp: actor.clientIp, userAgent: actor.userAgent, credential: actor.credential, actor: actor.actor, outcome: `${outcome}:${row.id}` satisfies OutcomeOf<'key.created' | 'key.revoked'> })
  }

  // Recover's bounds: a negative cache of hashes Postgres did not know, one look-up in flight
  // per hash, a budget of look-ups a second per client (recovery-budget.ts), and a cap on
  // look-ups in flight across all clients.
  const unknown = new Map<string, number>()
  const inFlight = new Map<string, Promise<TokenRecord | null>>()
  const budget = createRecoveryBudget({ perSecond: recoverPerSecond, burst: recoverBurst, maxClients: recoverClients, now })
  const knownUnknown = (keyHash: string): boolean => {
    const until = unknown.get(keyHash)
    if (until === undefined) return false
    if (until > now()) return true
    unknown.delete(keyHash)
    return false
  }
  const rememberUnknown = (keyHash: string): void => {
    if (unknown.size >= NEGATIVE_MAX) {
      // Oldest first (Map order): the cache stays bounded whatever is sent.
      const oldest = unknown.keys().next().value
      if (oldest !== undefined) unknown.delete(oldest)
    }
    unknown.set(keyHash, now() + negativeTtlMs)
  }
  const lookUp = async (keyHash: string): Promise<TokenRecord | null> => {
    const row = await store.liveByHash(keyHash)
    if (row === null) {
      rememberUnknown(keyHash)
      return null
    }
    const ttlMs = row.expiresAt.getTime() - now()
    if (ttlMs <= 0) return null
    const seeded = keyRecord(row)
    // Denied (ended meanwhile): not seeded, and not answered either.
    return await tokens.seedKey(keyHash, seeded, ttlMs, row.groupsVersion) ? seeded : null
  }

  const uses = new Set<string>()
  const flush = async (): Promise<void> => {
    if (uses.size === 0) return
    const ids = [...uses]
    uses.clear()
    await store.touch(ids, new Date(now()))
  }
  const timer = flushEveryMs > 0 ? setInterval(() => { flush().catch(() => {}) }, flushEveryMs) : undefined
  timer?.unref()

  return {
    async create (account, name, days, actor) {
      const keyName = checkedName(name)
      const lifeDays = days ?? Math.min(DEFAULT_KEY_DAYS, maxDays)
      if (!Number.isSafeInteger(lifeDays) || lifeDays < 1 || lifeDays > maxDays) throw badRequest(reasons.apiKeyDaysOutOfRange(maxDays))
      if (account.disabled) throw accountDisabled()
      const createdAt = now()
      // A whole second, as a token's expiration_date.
      const expiresAt = Math.floor((createdAt + lifeDays * DAY_MS) / 1000) * 1000
      const secret = generateApiKey(account.id)
      const keyHash = hashApiKey(secret)
      const created = await store.create({ id: newKeyId(), accountId: account.id, name: keyName, keyHash, expiresAt: new Date(expiresAt) }, maxPerAccount)
      if (!created.ok) throw created.refused === 'full' ? badRequest(reasons.apiKeysPerAccountReached(maxPerAccount)) : accountDisabled()
      const { row } = created
      try {
        if (!await tokens.seedKey(keyHash, keyRecord(row), expiresAt - now(), row.groupsVersion)) throw new UnavailableError('redis')
      } catch (error) {
        // No key handed out that Redis does not hold: the row ends with it (a re-seed never revives it).
        await store.end(row.id).catch(() => {})
        throw error
      }
      record('key.created', row, actor, 'created')
      return { key: row, secret }
    },
    async page (accountId, afterId, limit) {
      // One more than asked: whether a next page exists without a second query.
      const found = await store.pageLive(accountId, afterId, limit + 1)
      const keys = found.slice(0, limit)
      return { keys, next: found.length > limit ? keys.at(-1)?.id : undefined }
    },
    async revoke (id, actor, ownerId) {
      if (!isKeyIdShaped(id)) throw noSuchKey()
      const row = await store.find(id)
      if (row === null || (ownerId !== undefined && row.accountId !== ownerId)) throw noSuchKey()
      const ended = await store.end(id)
      // Already ended or expired: its record is ended again all the same (a retry after a 503).
      await tokens.endKey(row.keyHash)
      record('key.revoked', row, actor, ended === null ? 'already-ended' : 'revoked')
      return ended ?? row
    },
    async endAccount (account, actor, why) {
      const { ended, endedBefore } = await store.endAccount(account.id, ENDED_AGAIN_MS)
      if (ended.length + endedBefore.length === 0) return 0
      // Postgres first (above), so no re-seed revives them; then every record in one batch. A
      // batch that fails (a 503) leaves the rows ended: the retry's endedBefore finishes it, and
      // the events say which revocations were not acknowledged.
      try {
        await tokens.endKeys([...ended, ...endedBefore].map((row) => row.keyHash))
      } catch (error) {
        for (const row of ended) record('key.revoked', row, actor, `${why}-incomplete`)
        throw error
      }
      for (const row of ended) record('key.revoked', row, actor, why)
      return ended.length
    },
    liveKeyHashes: async (accountId) => await store.liveHashes(accountId),
    recover (keyHash, client) {
      if (knownUnknown(keyHash)) return Promise.resolve(null)
      const pending = inFlight.get(keyHash)
      if (pending !== undefined) return pending
      if (inFlight.size >= recoverInFlight || !budget.spend(client)) return Promise.reject(recoveryBusy())
      const lookup = lookUp(keyHash).finally(() => { inFlight.delete(keyHash) })
      inFlight.set(keyHash, lookup)
      return lookup
    },
    used (keyId) {
      uses.add(keyId)
    },
    flush,
    async close () {
      if (timer !== undefined) clearInterval(timer)
      await flush().catch(() => {})
    }
  }
}
