import type { Test } from 'tap'
import type { Database } from '../../src/db/database.js'
import { createSqlAuditLog, type AuditLog } from '../../src/core/stores/audit-log.js'
import type { RevocationFeed } from '../../src/core/stores/revocation-feed.js'
import type { TokenStore } from '../../src/core/stores/token-store.js'
import { createSqlSessions, USER_AGENT_MAX, type SqlSessions } from '../../src/sessions/sql-sessions.js'
import type { NewSession } from '../../src/sessions/sessions.js'
import { generateToken, hashToken } from '@auth-token-service/protocol/token'
import { recordRevocations, until } from '../stores/token-store.contract.js'

/** A migrated database and a token store side by side, as the service runs them. */
export interface SessionBackends {
  db: Database
  tokens: TokenStore & RevocationFeed
}

export type MakeSessionBackends = (t: Test) => Promise<SessionBackends>

interface Fixture extends SessionBackends {
  sessions: SqlSessions
  audit: AuditLog
  /** A new account's id. */
  account (username: string): Promise<string>
  /** What Login does: a token in the store, then its session. Returns the token's hash. */
  login (accountId: string, overrides?: Partial<NewSession>): Promise<string>
}

const CLIENT = { ip: '198.51.100.4', userAgent: 'test-agent/1.0' }

async function fixture (t: Test, make: MakeSessionBackends): Promise<Fixture> {
  const backends = await make(t)
  const audit = createSqlAuditLog(backends.db)
  const sessions = createSqlSessions({ db: backends.db, tokens: backends.tokens, audit })
  return {
    ...backends,
    sessions,
    audit,
    async account (username) {
      const { rows } = await backends.db.query<{ id: string }>('INSERT INTO users (username, password_hash) VALUES ($1, NULL) RETURNING id::text AS id', [username])
      return (rows[0] as { id: string }).id
    },
    async login (accountId, overrides = {}) {
      const tokenHash = hashToken(generateToken(accountId))
      const now = Date.now()
      const session: NewSession = { tokenHash, accountId, created: now, expiresAt: now + 60_000, client: CLIENT, federated: false, amr: ['pwd'], ...overrides }
      await backends.tokens.issue(tokenHash, { accountId, username: `user-${accountId}`, federated: session.federated, expiresAt: session.expiresAt }, session.expiresAt - now)
      await sessions.started(session)
      return tokenHash
    }
  }
}

const rowCount = async (db: Database, accountId: string): Promise<number> =>
  Number((await db.query<{ n: string }>('SELECT count(*)::text AS n FROM sessions WHERE account_id = $1', [accountId])).rows[0]?.n)

/** One suite for the sessions over every pair of backends: Postgres with Redis, PGlite with the in-process store. */
export function sessionsContract (t: Test, make: MakeSessionBackends): void {
  t.test('a Login\'s session is listed with what it recorded, newest first, the current one marked', async (t) => {
    const f = await fixture(t, make)
    const ann = await f.account('ann')
    const first = await f.login(ann, { created: Date.now() - 1000 })
    const second = await f.login(ann, { client: { ip: '2001:db8::1', userAgent: undefined }, federated: true })
    const list = await f.sessions.list(ann, first)
    t.equal(list.length, 2)
    t.same(list.map((s) => s.current), [false, true], 'newest first; the current one marked')
    const [newest, oldest] = list
    t.match(newest, { ip: '2001:db8::1', userAgent: '', federated: true, refreshed: null })
    t.match(oldest, { ip: CLIENT.ip, userAgent: CLIENT.userAgent, federated: false })
    for (const session of list) {
      t.match(session.id, /^[A-Za-z0-9_-]{22}$/, 'a 128-bit base64url id')
      t.not(session.id, first)
      t.not(session.id, second)
    }
    t.not(newest?.id, oldest?.id)
    t.equal(await f.sessions.idOf(first), oldest?.id, 'idOf names the session of a token hash')
    t.equal(await f.sessions.idOf(hashToken(generateToken('0'))), null)
    t.same((await f.sessions.list(ann)).map((s) => s.current), [false, false], 'no hash given: nothing is current')
    const bob = await f.account('bob')
    t.same(await f.sessions.list(bob), [], 'another account has none')
  })

  t.test('the user agent is cut to 256 characters and its control characters escaped', async (t) => {
    const f = await fixture(t, make)
    const ann = await f.account('ann')
    const long = `${'é'.repeat(300)}`
    await f.login(ann, { client: { ip: '127.0.0.1', userAgent: long } })
    await f.login(ann, { client: { ip: '127.0.0.1', userAgent: 'evil\r\nX-Injected: 1\u0000\u001b[31m' }, created: Date.now() + 5 })
    const [escaped, cut] = await f.sessions.list(ann)
    t.equal(escaped?.userAgent, 'evil\\u000d\\u000aX-Injected: 1\\u0000\\u001b[31m', 'control characters escaped as log lines escape them')
    t.equal([...(cut?.userAgent ?? '')].length, USER_AGENT_MAX, `cut to ${USER_AGENT_MAX} characters`)
  })

  t.test('a session whose token ended any other way is not listed, and its row goes', async (t) => {
    const f = await fixture(t, make)
    const ann = await f.account('ann')
    const kept = await f.login(ann)
    const loggedOut = await f.login(ann)
    const short = await f.login(ann, { expiresAt: Date.now() + 150 })
    await f.tokens.terminate(loggedOut)
    await new Promise((resolve) => setTimeout(resolve, 250))
    t.equal(await rowCount(f.db, ann), 3, 'three rows before anyone looks')
    const list = await f.sessions.list(ann)
    t.same(list.map((s) => s.id), [await f.sessions.idOf(kept)], 'only the active one is listed')
    t.equal(await rowCount(f.db, ann), 2, 'the ended one\'s row is removed when seen (the expired one is left for the next Login)')
    await f.login(ann)
    t.equal(await rowCount(f.db, ann), 2, 'a Login removes the account\'s expired rows')
    t.equal(await f.sessions.idOf(short), null)
  })

  t.test('a refresh moves the expiry and stamps refreshed; a token without a row gets one', async (t) => {
    const f = await fixture(t, make)
    const ann = await f.account('ann')
    const hash = await f.login(ann)
    const id = await f.sessions.idOf(hash)
    const later = Date.now() + 1000
    await f.tokens.refresh(hash, { accountId: ann, username: 'user', federated: false, expiresAt: later + 120_000 }, 121_000)
    await f.sessions.refreshed({ tokenHash: hash, accountId: ann, created: later, expiresAt: later + 120_000, client: { ip: '10.0.0.9' }, federated: false, amr: ['pwd'] })
    const [session] = await f.sessions.list(ann)
    t.equal(session?.id, id, 'the same session')
    t.equal(session?.refreshed, later)
    t.equal(session?.expiresAt, later + 120_000)
    t.equal(session?.ip, CLIENT.ip, 'where it began stays')

    // Issued before sessions were kept: a refresh gives it one.
    const old = hashToken(generateToken(ann))
    await f.tokens.issue(old, { accountId: ann, username: 'user', federated: false, expiresAt: Date.now() + 60_000 }, 60_000)
    await f.sessions.refreshed({ tokenHash: old, accountId: ann, created: Date.now(), expiresAt: Date.now() + 60_000, client: CLIENT, federated: false, amr: ['pwd'] })
    t.equal((await f.sessions.list(ann)).length, 2)
    t.not(await f.sessions.idOf(old), null)
  })

  t.test('amrOf: how the last Login of the token proved the account; null for a token without a row or a row from before methods were kept', async (t) => {
    const f = await fixture(t, make)
    const ann = await f.account('ann')
    const byPassword = await f.login(ann)
    const withCode = await f.login(ann, { amr: ['pwd', 'otp'] })
    const byPasskey = await f.login(ann, { amr: ['hwk'] })
    t.same(await f.sessions.amrOf(byPassword), ['pwd'])
    t.same(await f.sessions.amrOf(withCode), ['pwd', 'otp'])
    t.same(await f.sessions.amrOf(byPasskey), ['hwk'])
    // A refresh by a Login with a code: the methods of that Login.
    await f.sessions.refreshed({ tokenHash: byPassword, accountId: ann, created: Date.now(), expiresAt: Date.now() + 60_000, client: CLIENT, federated: false, amr: ['pwd', 'otp'] })
    t.same(await f.sessions.amrOf(byPassword), ['pwd', 'otp'], 'a refresh records its own Login\'s methods')
    t.equal(await f.sessions.amrOf(hashToken(generateToken(ann))), null, 'no row')
    await f.db.query('UPDATE sessions SET amr = NULL WHERE token_hash = $1', [withCode])
    t.equal(await f.sessions.amrOf(withCode), null, 'a row begun before the column')
  })

  t.test('end: a Logout of the session\'s token; false for an unknown id, another account\'s, or one already ended', async (t) => {
    const f = await fixture(t, make)
    const watcher = recordRevocations(f.tokens)
    t.teardown(watcher.stop)
    await until(watcher.isLive)
    const ann = await f.account('ann')
    const bob = await f.account('bob')
    const annToken = await f.login(ann)
    const bobToken = await f.login(bob)
    const bobSession = await f.sessions.idOf(bobToken) as string
    const annSession = await f.sessions.idOf(annToken) as string

    t.equal(await f.sessions.end(ann, bobSession, CLIENT), false, 'another account\'s session: false')
    t.ok(await f.tokens.find(bobToken), 'and it is untouched')
    t.equal(await f.sessions.end(ann, 'AAAAAAAAAAAAAAAAAAAAAA', CLIENT), false, 'an unknown id: false')
    t.equal(await f.sessions.end(ann, 'x\u0000\'; DROP TABLE sessions; --', CLIENT), false, 'anything at all: false, never a database error')

    t.equal(await f.sessions.end(ann, annSession, CLIENT), true)
    t.equal(await f.tokens.find(annToken), null, 'its token is ended')
    t.equal(await f.tokens.isDenied(annToken), true, 'and in the deny set')
    await until(() => watcher.events.flat().includes(annToken))
    t.pass('and announced on the revocation feed')
    t.equal(await f.sessions.end(ann, annSession, CLIENT), false, 'a second time: false')
    t.equal(await f.sessions.idOf(annToken), null, 'its row is gone')

    await f.audit.flush()
    const events = await f.audit.list({})
    t.match(events.filter((e) => e.event === 'session.end'), [{ username: `user-${ann}`, accountId: ann, clientIp: CLIENT.ip, outcome: 'terminated' }], 'one audit event, for the one that ended')
    t.equal(await f.sessions.end(bob, bobSession, CLIENT, 'admin'), true)
    await f.audit.flush()
    t.match((await f.audit.list({})).filter((e) => e.event === 'session.end').map((e) => e.outcome), ['terminated', 'terminated-by-admin'])
  })

  t.test('endAll: every session of the account but the excepted one, tokens without a row too', async (t) => {
    const f = await fixture(t, make)
    const ann = await f.account('ann')
    const bob = await f.account('bob')
    const current = await f.login(ann)
    const others = [await f.login(ann), await f.login(ann)]
    const rowless = hashToken(generateToken(ann))
    await f.tokens.issue(rowless, { accountId: ann, username: 'user', federated: false, expiresAt: Date.now() + 60_000 }, 60_000)
    const bobToken = await f.login(bob)

    t.equal(await f.sessions.endAll(ann, CLIENT, current), 3, 'two sessions and the token without one')
    for (const hash of [...others, rowless]) {
      t.equal(await f.tokens.find(hash), null)
      t.equal(await f.tokens.isDenied(hash), true)
    }
    t.ok(await f.tokens.find(current), 'the excepted one stays')
    t.ok(await f.tokens.find(bobToken), 'another account is untouched')
    t.same((await f.sessions.list(ann, current)).map((s) => s.current), [true])
    t.equal(await rowCount(f.db, ann), 1, 'the ended sessions\' rows are gone')

    t.equal(await f.sessions.endAll(ann, CLIENT), 1, 'none excepted: the last one too')
    t.same(await f.sessions.list(ann), [])
    await f.audit.flush()
    t.match((await f.audit.list({})).filter((e) => e.event === 'sessions.end'), [
      { username: 'ann', accountId: ann, outcome: 'tokens-ended-3-but-current' },
      { username: 'ann', accountId: ann, outcome: 'tokens-ended-1' }
    ])
  })
}
