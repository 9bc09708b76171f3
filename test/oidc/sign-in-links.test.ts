import t, { type Test } from 'tap'
import { Redis } from 'ioredis'
import { createMemoryArtifactStore, createRedisArtifactStore, type ArtifactStore } from '../../src/oidc/artifact-store.js'
import { createSignInLinks } from '../../src/oidc/sign-in-links.js'
import { freshRedisPrefix, requireRedis } from '../../support/redis.js'

/*
 * The links between the provider's sessions and the sign-in tokens they stand on, both ways, on
 * Redis and in process: the back-channel logout reads a sign-in's sessions when it ends, and takes
 * them in one step so that of the instances that hear of the end, one sends the logout tokens.
 */

const H1 = 'a'.repeat(43)
const H2 = 'b'.repeat(43)

function linksContract (t: Test, open: (t: Test) => Promise<{ store: ArtifactStore, prefix: string }>): void {
  t.test('both ways, and taken once', async (t) => {
    const { store, prefix } = await open(t)
    const links = createSignInLinks(store, prefix)
    await links.link('session-1', H1, 60_000)
    await links.link('session-2', H1, 60_000)
    t.equal(await links.signInOf('session-1'), H1)
    t.same((await links.sessionsOf(H1)).sort(), ['session-1', 'session-2'], 'the sessions a sign-in stands under')
    t.same(await links.sessionsOf(H2), [])

    // The same browser signs in again: the session moves on; the older sign-in's set still names it (readers check signInOf).
    await links.link('session-1', H2, 60_000)
    t.equal(await links.signInOf('session-1'), H2)
    t.same(await links.sessionsOf(H2), ['session-1'])
    t.same((await links.sessionsOf(H1)).sort(), ['session-1', 'session-2'])

    const takers = await Promise.all(Array.from({ length: 8 }, async () => await links.takeSessions(H1)))
    const winners = takers.filter((taken) => taken.length > 0)
    t.equal(winners.length, 1, 'of eight takers at once, one gets the sessions')
    t.same(winners[0]?.sort(), ['session-1', 'session-2'], 'all of them')
    t.same(await links.sessionsOf(H1), [], 'and they are gone')
    t.same(await links.takeSessions(H1), [], 'taking again finds none')
  })

  t.test('the set expires with the sign-in it names (and no sooner than its longest link)', async (t) => {
    const { store, prefix } = await open(t)
    const links = createSignInLinks(store, prefix)
    await links.link('session-1', H1, 400)
    await links.link('session-2', H1, 100)
    await new Promise((resolve) => setTimeout(resolve, 200))
    t.same((await links.sessionsOf(H1)).sort(), ['session-1', 'session-2'], 'kept for its longest member')
    t.equal(await links.signInOf('session-2'), undefined, 'the short link gone')
    await new Promise((resolve) => setTimeout(resolve, 300))
    t.same(await links.sessionsOf(H1), [], 'then gone: nothing kept past the sign-in')
    t.equal(await links.signInOf('session-1'), undefined)
  })
}

t.test('Redis', async (t) => {
  linksContract(t, async (t) => {
    const redis = new Redis(await requireRedis())
    t.teardown(async () => { await redis.quit() })
    return { store: createRedisArtifactStore(redis), prefix: `${await freshRedisPrefix(t)}oidc:` }
  })
})
t.test('in process', async (t) => {
  linksContract(t, async () => ({ store: createMemoryArtifactStore(), prefix: 'oidc:' }))
})
