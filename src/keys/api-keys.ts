import { reasons } from '../errors/reasons.js'
import { badRequest, StatusError, UnavailableError } from '../errors/status.js'
import type { AuditLog } from '../stores/audit-log.js'
import type { ApiKeyRecords } from '../stores/api-key-records.js'
import type { ApiKeyRow, ApiKeyStore } from '../stores/api-key-store.js'
import type { TokenRecord } from '@auth-token-service/guard/layout'
import type { UserRecord } from '../stores/user-store.js'
import { generateApiKey, hashApiKey, isKeyIdShaped, newKeyId } from './secret.js'

/**
 * API keys (issue 33) over Postgres (what a key is: api_keys) and the token store (whether it
 * works now: its record, expiring with it). Postgres is written first when a key is made and
 * when it ends, so the record Redis holds is never more alive than the row: a record Redis lost
 * is re-seeded from a live row only (recover), and an ended key's hash is denied in Redis
 * before its revocation is acknowledged, so a re-seed in flight cannot bring it back.
 */

export const DEFAULT_KEY_DAYS = 90
const DAY_MS = 86_400_000

export const noSuchKey = (): StatusError => new StatusError(404, 'Not Found', 404, {}, { detail: reasons.noSuchKey() })
export const accountDisabled = (): StatusError => new StatusError(409, 'Conflict', 409, {}, { detail: reasons.accountDisabled() })

/** Who asks, for the audit trail: the admin API's caller, the command line, or the account itself. */
export interface KeyActor {
  clientIp?: string | undefined
  userAgent?: string | undefined
  credential?: string | undefined
}

export interface CreatedKey {
  key: ApiKeyRow
  /** Shown once: nothing keeps it. */
  secret: string
}

export interface ApiKeys {
  /** A new key of the account, valid `days` days (default 90, at most the configured maximum). */
  create (account: UserRecord, name: string, days: number | undefined, actor: KeyActor): Promise<CreatedKey>
  /** The account's live keys, oldest first. */
  list (accountId: string): Promise<ApiKeyRow[]>
  /**
   * Ends the key `id`: marked ended in Postgres, then ended in the token store (deny set and
   * revocation feed). With `ownerId`, only a key of that account: any other is noSuchKey, as an
   * unknown one. An ended key is ended again in the store (a retry after a 503 finishes the job).
   */
  revoke (id: string, actor: KeyActor, ownerId?: string): Promise<ApiKeyRow>
  /** Ends every live key of the account (disable, revoke-all, delete); returns how many. */
  endAccount (account: { id: string, username: string }, actor: KeyActor, why: string): Promise<number>
  /**
   * Authenticate found no record for this key hash: the record re-seeded from a live row, or
   * null. Bounded (see createApiKeys): random `atsk_` strings cannot drive Postgres.
   */
  recover (keyHash: string): Promise<TokenRecord | null>
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
  now?: () => number
  /** Postgres look-ups a second that Authenticate's misses may make (default 20). */
  recoverPerSecond?: number
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
  return { accountId: row.accountId, username: row.username, federated: false, expiresAt: row.expiresAt.getTime(), keyId: row.id }
}

const NEGATIVE_MAX = 10_000

export function createApiKeys ({ store, tokens, audit, maxDays, now = Date.now, recoverPerSecond = 20, negativeTtlMs = 60_000, flushEveryMs = 60_000 }: ApiKeysDeps): ApiKeys {
  const record = (event: 'key.created' | 'key.revoked', row: ApiKeyRow, actor: KeyActor, outcome: string): void => {
    audit.record({ event, username: row.username, accountId: row.accountId, clientIp: actor.clientIp, userAgent: actor.userAgent, credential: actor.credential, outcome: `${outcome}:${row.id}` })
  }

  // Recover's bounds: a negative cache of hashes Postgres did not know, one look-up in flight
  // per hash, and a budget of look-ups a second across all hashes (a token bucket).
  const unknown = new Map<string, number>()
  const inFlight = new Map<string, Promise<TokenRecord | null>>()
  let budget = recoverPerSecond
  let refilledAt = now()
  const spend = (): boolean => {
    const t = now()
    budget = Math.min(recoverPerSecond, budget + ((t - refilledAt) / 1000) * recoverPerSecond)
    refilledAt = t
    if (budget < 1) return false
    budget -= 1
    return true
  }
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
    return await tokens.seedKey(keyHash, seeded, ttlMs) ? seeded : null
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
      const row = await store.create({ id: newKeyId(), accountId: account.id, name: keyName, keyHash, expiresAt: new Date(expiresAt) })
      if (row === null) throw accountDisabled()
      try {
        if (!await tokens.seedKey(keyHash, keyRecord(row), expiresAt - now())) throw new UnavailableError('redis')
      } catch (error) {
        // No key handed out that Redis does not hold: the row ends with it (a re-seed never revives it).
        await store.end(row.id).catch(() => {})
        throw error
      }
      record('key.created', row, actor, 'created')
      return { key: row, secret }
    },
    list: async (accountId) => await store.listLive(accountId),
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
      const ended = await store.endAccount(account.id)
      for (const row of ended) {
        await tokens.endKey(row.keyHash)
        record('key.revoked', row, actor, why)
      }
      return ended.length
    },
    recover (keyHash) {
      if (knownUnknown(keyHash)) return Promise.resolve(null)
      const pending = inFlight.get(keyHash)
      if (pending !== undefined) return pending
      if (!spend()) return Promise.resolve(null)
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
