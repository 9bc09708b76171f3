import { randomBytes } from 'node:crypto'
import type { Queryable } from '../db/database.js'
import { escapeControlCharacters } from '@auth-token-service/protocol/log-escape'
import { databaseGuard } from '../db/guarded.js'
import type { AuditLog } from '../core/stores/audit-log.js'
import type { OutcomeOf } from '../core/events.js'
import type { TokenStore } from '../core/stores/token-store.js'
import type { NewSession, SessionInfo, SessionRecorder, Sessions, SignInMethod } from './sessions.js'

/** Characters (code points) of a user agent kept, before its control characters are escaped. */
export const USER_AGENT_MAX = 256

const SESSION_ID_SHAPE = /^[A-Za-z0-9_-]{22}$/

/** 128 random bits, base64url (22 characters): public, and nothing to do with the token. */
export function newSessionId (): string {
  return randomBytes(16).toString('base64url')
}

/** The user agent as a session keeps it: cut to USER_AGENT_MAX code points, then escaped as log lines are. */
export function keptUserAgent (userAgent: string | undefined): string {
  if (userAgent === undefined) return ''
  const points = [...userAgent]
  return escapeControlCharacters(points.length > USER_AGENT_MAX ? points.slice(0, USER_AGENT_MAX).join('') : userAgent)
}

interface SessionRow {
  id: string
  token_hash: string
  created_at: Date | string
  refreshed_at: Date | string | null
  client_ip: string
  user_agent: string
  federated: boolean
}

export interface SqlSessionsDeps {
  db: Queryable
  tokens: TokenStore
  audit: AuditLog
  /** Wall clock in epoch ms; injectable for tests. */
  now?: () => number
  /** Driver failures, before they become 503s (counted as Postgres errors). */
  onError?: (error: unknown) => void
}

export type SqlSessions = Sessions & SessionRecorder

const SIGN_IN_METHODS: ReadonlySet<string> = new Set<SignInMethod>(['pwd', 'otp', 'hwk'])
const isSignInMethod = (name: string): name is SignInMethod => SIGN_IN_METHODS.has(name)

const iso = (ms: number): string => new Date(ms).toISOString()
const ms = (value: Date | string): number => new Date(value).getTime()

/**
 * Sessions over the `sessions` table (sql/005-sessions.sql), on Postgres and PGlite alike,
 * beside the token store that decides what is active: a row is listed only while the store
 * still finds its token, so a token ended any way (Logout, the cap, a revoke-all, expiry) is
 * never shown, and its row is removed when next seen. Ending a session is the token store's
 * terminate, as Logout's: deny set and revocation feed in one step.
 */
export function createSqlSessions ({ db, tokens, audit, now = Date.now, onError }: SqlSessionsDeps): SqlSessions {
  /** Any driver failure is the contract's 503: the caller fails closed. */
  const guarded = databaseGuard(onError)

  /** Rows of tokens that ended; a failure leaves them to the next look (they are never listed). */
  const forget = async (tokenHashes: readonly string[]): Promise<void> => {
    if (tokenHashes.length === 0) return
    await db.query('DELETE FROM sessions WHERE token_hash = ANY($1::text[])', [tokenHashes]).catch((error: unknown) => { onError?.(error) })
  }

  const values = (session: NewSession, id: string): unknown[] => [
    id, session.accountId, session.tokenHash, iso(session.created), iso(session.expiresAt),
    session.client.ip, keptUserAgent(session.client.userAgent), session.federated, session.amr.join(',')
  ]

  return {
    started: async (session) => {
      await guarded(async () => {
        // The account's expired rows go with each new one: no sweep job, and no row outlives its Login by long.
        await db.query(`WITH expired AS (DELETE FROM sessions WHERE account_id = $2 AND expires_at <= $4)
          INSERT INTO sessions (id, account_id, token_hash, created_at, expires_at, client_ip, user_agent, federated, amr)
          VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, values(session, newSessionId()))
      })
    },

    refreshed: async (session) => {
      await guarded(async () => {
        await db.query(`INSERT INTO sessions (id, account_id, token_hash, created_at, refreshed_at, expires_at, client_ip, user_agent, federated, amr)
          VALUES ($1, $2, $3, $4, $4, $5, $6, $7, $8, $9)
          ON CONFLICT (token_hash) DO UPDATE SET refreshed_at = EXCLUDED.refreshed_at, expires_at = EXCLUDED.expires_at, amr = EXCLUDED.amr
          WHERE sessions.account_id = EXCLUDED.account_id`, values(session, newSessionId()))
      })
    },

    ended: forget,

    list: async (accountId, currentTokenHash) => {
      const { rows } = await guarded(async () => await db.query<SessionRow>(
        `SELECT id, token_hash, created_at, refreshed_at, client_ip, user_agent, federated FROM sessions
          WHERE account_id = $1 AND expires_at > $2 ORDER BY created_at DESC, id`, [accountId, iso(now())]))
      // One find each: the Redis store sends those made together as one MGET.
      // Peeks: listing the sessions must not keep every one of them from going idle.
      const records = await Promise.all(rows.map(async (row) => await tokens.find(row.token_hash, true)))
      const sessions: SessionInfo[] = []
      const gone: string[] = []
      rows.forEach((row, i) => {
        const record = records[i]
        if (record === null || record === undefined || record.accountId !== accountId) {
          gone.push(row.token_hash)
          return
        }
        sessions.push({
          id: row.id,
          created: ms(row.created_at),
          refreshed: row.refreshed_at === null ? null : ms(row.refreshed_at),
          // The store's record is what Authenticate answers by; the row's copy may lag a refresh.
          expiresAt: record.expiresAt,
          ip: row.client_ip,
          userAgent: row.user_agent,
          federated: row.federated,
          current: row.token_hash === currentTokenHash
        })
      })
      await forget(gone)
      return sessions
    },

    end: async (accountId, sessionId, client, actor) => {
      // One query for an unknown id and another account's alike: nothing tells them apart. An id
      // of another shape (a NUL, which Postgres refuses, included) is asked for as one that matches nothing.
      const { rows } = await guarded(async () => await db.query<{ token_hash: string }>(
        'SELECT token_hash FROM sessions WHERE id = $1 AND account_id = $2', [SESSION_ID_SHAPE.test(sessionId) ? sessionId : '', accountId]))
      const tokenHash = rows[0]?.token_hash
      if (tokenHash === undefined) return false
      const ended = await tokens.terminate(tokenHash)
      await forget([tokenHash])
      if (ended === null) return false
      audit.record({
        event: 'session.end',
        username: ended.username,
        accountId: ended.accountId,
        clientIp: client.ip,
        userAgent: client.userAgent,
        credential: client.credential,
        actor: client.actor,
        outcome: actor === undefined ? 'terminated' : `terminated-by-${actor}` satisfies OutcomeOf<'session.ended'>,
        tokensEnded: 1
      })
      return true
    },

    endAll: async (accountId, client, exceptTokenHash, actor) => {
      const ended = await tokens.terminateAccount(accountId, undefined, exceptTokenHash)
      await forget(ended)
      // The audit trail is searched by username: the account's, read after (it cannot fail the ending).
      const { rows } = await db.query<{ username: string }>('SELECT username FROM users WHERE id = $1', [accountId]).catch(() => ({ rows: [] }))
      audit.record({
        event: 'sessions.end',
        username: rows[0]?.username,
        accountId,
        clientIp: client.ip,
        userAgent: client.userAgent,
        credential: client.credential,
        actor: client.actor,
        outcome: `tokens-ended-${ended.length}${exceptTokenHash === undefined ? '' : '-but-current'}${actor === undefined ? '' : `-by-${actor}`}` satisfies OutcomeOf<'session.ended'>,
        tokensEnded: ended.length
      })
      return ended.length
    },

    countActive: async () => {
      const { rows } = await guarded(async () => await db.query<{ count: string | number }>(
        'SELECT count(*) AS count FROM sessions WHERE expires_at > $1', [iso(now())]))
      return Number(rows[0]?.count ?? 0)
    },

    idOf: async (tokenHash) => {
      const { rows } = await guarded(async () => await db.query<{ id: string }>('SELECT id FROM sessions WHERE token_hash = $1', [tokenHash]))
      return rows[0]?.id ?? null
    },

    amrOf: async (tokenHash) => {
      const { rows } = await guarded(async () => await db.query<{ amr: string | null }>('SELECT amr FROM sessions WHERE token_hash = $1', [tokenHash]))
      const amr = rows[0]?.amr
      return amr === undefined || amr === null || amr === '' ? null : amr.split(',').filter(isSignInMethod)
    }
  }
}
