import t from 'tap'
import { createPositiveCache } from '../../packages/guard/src/cache.js'
import type { TokenRecord } from '@auth-token-service/protocol/layout'

/** The cache alone, on injected clocks: the rules that keep it from ever answering for a revoked token. */

function setup (options: { maxEntries?: number, ttlMs?: number } = {}) {
  let mono = 1000
  let wall = 1_700_000_000_000
  const cache = createPositiveCache({
    maxEntries: options.maxEntries ?? 10,
    ttlMs: options.ttlMs ?? 60_000,
    now: () => mono,
    wallNow: () => wall
  })
  const record = (accountId = '1', lifeMs = 3_600_000): TokenRecord =>
    ({ accountId, username: `u${accountId}`, federated: false, expiresAt: wall + lifeMs })
  const put = (hash: string, value: TokenRecord = record()): void => { cache.finish(cache.begin(hash), value) }
  const advance = (ms: number): void => { mono += ms; wall += ms }
  return { cache, record, put, advance }
}

t.test('nothing is cached or served before the feed is live', async (t) => {
  const { cache, put } = setup()
  put('h')
  t.equal(cache.get('h'), undefined)
  t.equal(cache.size, 0)
  cache.live()
  put('h')
  t.ok(cache.get('h'))
})

t.test('a lookup begun before the feed was live is not cached after it becomes live', async (t) => {
  const { cache, record } = setup()
  const lookup = cache.begin('h')
  cache.live()
  cache.finish(lookup, record())
  t.equal(cache.get('h'), undefined, 'a revocation may have been missed before live')
})

t.test('negative answers are never cached', async (t) => {
  const { cache } = setup()
  cache.live()
  cache.finish(cache.begin('h'), null)
  t.equal(cache.size, 0)
})

t.test('a revocation evicts; an interruption drops everything and stops caching until live', async (t) => {
  const { cache, put } = setup()
  cache.live()
  put('a'); put('b'); put('c')
  cache.revoked(['a', 'x'])
  t.equal(cache.get('a'), undefined)
  t.ok(cache.get('b'))
  cache.interrupted()
  t.equal(cache.size, 0)
  put('b')
  t.equal(cache.get('b'), undefined, 'not cached while interrupted')
  cache.live()
  put('b')
  t.ok(cache.get('b'))
})

t.test('the race: an answer that arrives after its revocation is served once, never cached', async (t) => {
  const { cache, record } = setup()
  cache.live()
  const racing = cache.begin('h')
  const other = cache.begin('other')
  // The store answered before the revocation, the message arrives before the answer.
  cache.revoked(['h'])
  cache.finish(racing, record())
  t.equal(cache.get('h'), undefined, 'the stale answer was not cached')
  cache.finish(other, record())
  t.ok(cache.get('other'), 'lookups of other tokens are not affected')
  // A lookup begun after the revocation is a fresh answer again.
  cache.finish(cache.begin('h'), record())
  t.ok(cache.get('h'))
})

t.test('an interruption during a lookup keeps its answer out, even when the feed is live again by then', async (t) => {
  const { cache, record } = setup()
  cache.live()
  const lookup = cache.begin('h')
  cache.interrupted()
  cache.live()
  cache.finish(lookup, record())
  t.equal(cache.get('h'), undefined)
})

t.test('concurrent lookups of one token are each tracked', async (t) => {
  const { cache, record } = setup()
  cache.live()
  const first = cache.begin('h')
  const second = cache.begin('h')
  cache.abandon(first)
  cache.revoked(['h'])
  cache.finish(second, record())
  t.equal(cache.get('h'), undefined)
})

t.test('an entry lives until ttlMs or the token\'s expiry, whichever comes first', async (t) => {
  const { cache, put, record, advance } = setup({ ttlMs: 1000 })
  cache.live()
  put('long', record('1', 3_600_000))
  put('short', record('2', 300))
  put('expired', record('3', 0))
  t.equal(cache.get('expired'), undefined, 'an answer with no life left is not cached')
  advance(299)
  t.ok(cache.get('short'))
  advance(1)
  t.equal(cache.get('short'), undefined, 'gone at the token\'s expiry')
  t.ok(cache.get('long'))
  advance(700)
  t.equal(cache.get('long'), undefined, 'gone after ttlMs')
})

t.test('bounded in entries: the least recently used goes first', async (t) => {
  const { cache, put } = setup({ maxEntries: 2 })
  cache.live()
  put('a'); put('b')
  cache.get('a')
  put('c')
  t.equal(cache.size, 2)
  t.ok(cache.get('a'))
  t.equal(cache.get('b'), undefined)
  t.ok(cache.get('c'))
})

t.test('bounded in entries: reading the most recent entry again and again keeps the order exact', async (t) => {
  const { cache, put } = setup({ maxEntries: 3 })
  cache.live()
  put('a'); put('b'); put('c')
  for (let i = 0; i < 3; i++) t.ok(cache.get('c'))
  cache.get('a')
  cache.get('a')
  cache.get('b')
  cache.revoked(['b'])
  put('d')
  put('e')
  t.equal(cache.size, 3)
  t.equal(cache.get('c'), undefined, 'c, read only before a and b, went first')
  t.ok(cache.get('a'))
  t.ok(cache.get('d'))
  t.ok(cache.get('e'))
})

t.test('a proof that lapsed unnoticed drops the cache when the next proof comes (as after a failover)', async (t) => {
  const { cache, put, advance } = setup()
  cache.live(800)
  put('a')
  t.ok(cache.get('a'), 'cached while proven')
  // No `get` while the proof is lapsed (an idle guard), then the feed proves itself again:
  // a revocation may have been missed in the gap, so what was cached before it is gone.
  advance(1000)
  cache.live(800)
  t.equal(cache.size, 0, 'dropped, not carried over the gap')
  t.equal(cache.get('a'), undefined)
  put('a')
  t.ok(cache.get('a'), 'caching again under the new proof')
  // A proof renewed in time keeps the entries.
  advance(500)
  cache.live(800)
  t.ok(cache.get('a'), 'kept across a proof renewed before it lapsed')
})
