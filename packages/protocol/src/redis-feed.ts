import { performance } from 'node:perf_hooks'
import type { Cluster, Redis } from 'ioredis'
import { FEED_HEARTBEAT_MS, FEED_PROOF_MS, FEED_STALL_MS, type RevocationWatcher } from './feed.js'
import { createFeedWatchers } from './feed-watchers.js'
import { duplicateForSubscribing, type RedisClient } from './redis-connection.js'
import { createClusterRevocationFeed } from './cluster-feed.js'

export interface RevocationSubscription {
  watch (watcher: RevocationWatcher): () => void
  close (): Promise<void>
}

/**
 * The `revoked` channel on a connection of its own (a subscribed connection can
 * do nothing else), opened with the first watcher. Each (re)connection subscribes
 * again and only then reports `live`; a lost connection reports `interrupted`, since
 * pub/sub does not replay what was published meanwhile. On a Redis Cluster, its own
 * kind (cluster-feed.ts): there a PONG proves less.
 */
/** A value test (ioredis's `isCluster`), so that no class of ioredis is loaded here. */
const isCluster = (redis: RedisClient): redis is Cluster => redis.isCluster

export function createRevocationFeed (redis: RedisClient, channel: string): RevocationSubscription {
  if (isCluster(redis)) return createClusterRevocationFeed(redis, channel)
  const watchers = createFeedWatchers()
  let subscriber: Redis | undefined

  const open = (): Redis => {
    const connection = duplicateForSubscribing(redis, `${channel}-watcher`)
    connection.on('error', () => {})
    connection.on('ready', () => {
      connection.subscribe(channel).then(() => { watchers.setLive(true) }, () => { connection.disconnect(true) })
    })
    connection.on('close', () => { watchers.setLive(false) })
    connection.on('message', (from: string, message: string) => {
      if (from === channel) watchers.deliver(message)
    })
    return connection
  }

  // The proof of liveness (feed.ts): a PING on the subscribed connection every
  // FEED_HEARTBEAT_MS; its PONG renews every watcher's trust for FEED_PROOF_MS from the PING's
  // sending. A PING unanswered for FEED_STALL_MS (a half-open connection: a NAT drop, a frozen
  // proxy) cuts the connection, so it is made again; the watchers' trust has lapsed long before.
  let pingSentAt: number | undefined
  const heartbeat = setInterval(() => {
    const connection = subscriber
    if (connection === undefined || !watchers.live) return
    if (pingSentAt !== undefined) {
      if (performance.now() - pingSentAt > FEED_STALL_MS) {
        pingSentAt = undefined
        connection.disconnect(true)
      }
      return
    }
    const sentAt = performance.now()
    pingSentAt = sentAt
    connection.ping().then(() => {
      if (pingSentAt !== sentAt) return
      pingSentAt = undefined
      if (subscriber !== connection) return
      watchers.prove(FEED_PROOF_MS - (performance.now() - sentAt))
    }, () => {
      if (pingSentAt === sentAt) pingSentAt = undefined
      if (subscriber === connection) connection.disconnect(true)
    })
  }, FEED_HEARTBEAT_MS)
  heartbeat.unref()

  return {
    watch (watcher) {
      subscriber ??= open()
      return watchers.add(watcher)
    },
    async close () {
      clearInterval(heartbeat)
      watchers.clear()
      const connection = subscriber
      subscriber = undefined
      if (connection !== undefined) await connection.quit().catch(() => { connection.disconnect() })
    }
  }
}
