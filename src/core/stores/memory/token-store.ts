import { performance } from 'node:perf_hooks'
import { activeAt, idles, type TokenRecord } from '@auth-token-service/protocol/layout'
import type { RevocationFeed } from '../revocation-feed.js'
import type { RevocationWatcher } from '@auth-token-service/protocol/feed'
import type { TokenStore } from '../token-store.js'
import type { ApiKeyRecords } from '../api-key-records.js'
import { TokenTable, type Entry } from './token-table.js'
import { DenySet } from './deny-set.js'
import { TokenLinks } from './token-links.js'
import { GroupChanges, withGroups } from './group-changes.js'

export interface MemoryTokenStoreOptions {
  denyTtlMs: number
  /** Active tokens one account may hold; an issue beyond it ends the account's oldest. Default 1000. */
  maxTokensPerAccount?: number
  /** Injectable monotonic clock for tests of the store itself. */
  now?: () => number
  /** Wall clock (epoch ms) that `expiresAt` is compared with on read. */
  wallNow?: () => number
  /** AUTH_IDLE_TIMEOUT_SECONDS in ms: a Login token not presented for this long is refused; absent: off. */
  idleTimeoutMs?: number | undefined
}

/**
 * The embedded default's token store: the Redis store's semantics in one process.
 * Every method is synchronous inside, so each is atomic as the Redis scripts are.
 */
export interface MemoryTokenStore extends TokenStore, ApiKeyRecords, RevocationFeed {
  readonly kind: 'in-process'
}

/** Who hears of ended tokens (the guard's revocation feed): one process, so nothing is missed and the feed is live at once. */
class RevocationAnnouncer {
  private readonly watchers = new Set<RevocationWatcher>()

  watch (watcher: RevocationWatcher): () => void {
    this.watchers.add(watcher)
    watcher.live()
    return () => { this.watchers.delete(watcher) }
  }

  announce (hashes: readonly string[]): void {
    if (hashes.length === 0) return
    for (const watcher of this.watchers) watcher.revoked(hashes)
  }

  clear (): void {
    this.watchers.clear()
  }
}

export function createMemoryTokenStore (options: MemoryTokenStoreOptions): MemoryTokenStore {
  const now = options.now ?? (() => performance.now())
  const wallNow = options.wallNow ?? Date.now
  const maxTokens = options.maxTokensPerAccount ?? 1000
  const idleTimeoutMs = options.idleTimeoutMs
  const table = new TokenTable(now)
  const denied = new DenySet(now, options.denyTtlMs)
  const feed = new RevocationAnnouncer()
  /** accountId -> the epoch its last revocation recorded. Small: one number per account ever revoked. */
  const epochs = new Map<string, number>()
  const stale = (accountId: string, epoch: number | undefined): boolean =>
    epoch !== undefined && (epochs.get(accountId) ?? -Infinity) > epoch
  const links = new TokenLinks((hash) => table.live(hash) !== undefined)
  const groupChanges = new GroupChanges()
  const withCurrentGroups = (record: TokenRecord, groupsVersion: number | undefined): TokenRecord => groupChanges.current(record, groupsVersion)

  /** Not presented for the idle timeout (a Login token's only): refused, as on Redis. */
  const idle = (entry: Entry): boolean =>
    idleTimeoutMs !== undefined && idles(entry.record) && now() - entry.seen >= idleTimeoutMs

  /** Ends a live entry: gone from the table, its hash denied; and the tokens given out under it (returned with it). */
  const end = (hash: string, entry: Entry): string[] => {
    table.forget(hash, entry)
    denied.add(hash)
    const ended = [hash]
    for (const child of links.take(hash) ?? []) {
      const found = table.live(child)
      if (found !== undefined) ended.push(...end(child, found))
    }
    return ended
  }

  return {
    kind: 'in-process',
    // Nothing to connect to.
    async ready () {},
    async issue (tokenHash, record, ttlMs, epoch, groupsVersion) {
      if (stale(record.accountId, epoch)) return false
      const index = table.addToken(tokenHash, withCurrentGroups(record, groupsVersion), ttlMs)
      // The cap: the index is in order of issue (a refresh re-inserts), so its first entries are the
      // oldest-issued, and the one just added is last: never ended while the cap is at least 1.
      const ended: string[] = []
      for (const hash of index) {
        if (index.size <= maxTokens) break
        const entry = table.live(hash)
        if (entry === undefined) continue
        ended.push(...end(hash, entry))
      }
      feed.announce(ended)
      return true
    },
    async issueUnder (parentHash, tokenHash, record, ttlMs, epoch, groupsVersion) {
      const parent = table.live(parentHash)
      if (parent === undefined || idle(parent) || stale(record.accountId, epoch)) return false
      table.addToken(tokenHash, withCurrentGroups(record, groupsVersion), ttlMs)
      links.link(parentHash, tokenHash)
      return true
    },
    async find (tokenHash, peek = false) {
      const entry = table.live(tokenHash)
      if (entry === undefined) return null
      if (idle(entry)) return null
      // Off: nothing written on a find.
      if (!peek && idleTimeoutMs !== undefined) entry.seen = now()
      return activeAt({ ...entry.record }, wallNow())
    },
    async refresh (tokenHash, record, ttlMs, epoch, groupsVersion) {
      const entry = table.live(tokenHash)
      // An idle token is not brought back: the Login gets a new one.
      if (entry === undefined || idle(entry) || entry.record.accountId !== record.accountId || stale(record.accountId, epoch)) return false
      table.renew(tokenHash, withCurrentGroups(record, groupsVersion), ttlMs)
      return true
    },
    async regroup (accountId, groups, version, keyHashes) {
      if (!groupChanges.record(accountId, groups, version)) return 0
      const rewritten: string[] = []
      for (const hash of [...table.tokensOf(accountId) ?? [], ...keyHashes]) {
        const entry = table.live(hash)
        if (entry === undefined || entry.record.accountId !== accountId) continue
        entry.record = withGroups(entry.record, groups)
        rewritten.push(hash)
      }
      feed.announce(rewritten)
      return rewritten.length
    },
    async terminate (tokenHash) {
      const entry = table.live(tokenHash)
      if (entry === undefined) return null
      feed.announce(end(tokenHash, entry))
      return { ...entry.record }
    },
    async seedKey (keyHash, record, ttlMs, groupsVersion) {
      if (denied.has(keyHash)) return false
      table.addKey(keyHash, withCurrentGroups(record, groupsVersion), ttlMs)
      return true
    },
    async endKey (keyHash) {
      const entry = table.get(keyHash)
      if (entry !== undefined) table.forget(keyHash, entry)
      denied.add(keyHash)
      feed.announce([keyHash])
    },
    async endKeys (keyHashes) {
      if (keyHashes.length === 0) return
      for (const keyHash of keyHashes) {
        const entry = table.get(keyHash)
        if (entry !== undefined) table.forget(keyHash, entry)
        denied.add(keyHash)
      }
      feed.announce([...keyHashes])
    },
    async terminateAccount (accountId, epoch, exceptTokenHash) {
      if (epoch !== undefined && (epochs.get(accountId) ?? -Infinity) < epoch) epochs.set(accountId, epoch)
      const index = table.tokensOf(accountId)
      if (index === undefined) return []
      const ended: string[] = []
      // A copy: ending a token takes it out of the index (and the last one, the index itself).
      for (const hash of [...index]) {
        if (hash === exceptTokenHash) continue
        const entry = table.live(hash)
        if (entry === undefined) continue
        ended.push(...end(hash, entry))
      }
      feed.announce(ended)
      return ended
    },
    async isDenied (tokenHash) {
      return denied.has(tokenHash)
    },
    async listDenied () {
      return denied.list()
    },
    async ping () {},
    watchRevocations (watcher) {
      return feed.watch(watcher)
    },
    async close () {
      feed.clear()
      table.clear()
      denied.clear()
      epochs.clear()
      groupChanges.clear()
      links.clear()
    }
  }
}
