import type { RevocationWatcher } from '../revocation-feed.js'
import { withTimeout } from '../../time-limit.js'
import { duplicateForSubscribing, type RedisClient } from './client.js'

const HEARTBEAT_INTERVAL_MS = 5000
const HEARTBEAT_TIMEOUT_MS = 2000

export interface RevocationSubscription {
  watch (watcher: RevocationWatcher): () => void
  close (): Promise<void>
}

/**
 * The `revoked` channel on a connection of its own (a subscribed connection can
 * do nothing else), opened with the first watcher. Each (re)connection subscribes
 * again and only then reports `live`; a lost connection reports `interrupted`, since
 * pub/sub does not replay what was published meanwhile.
 */
export function createRevocationFeed (redis: RedisClient, channel: string): RevocationSubscription {
  const watchers = new Set<RevocationWatcher>()
  let subscriber: RedisClient | undefined
  let live = false

  const setLive = (next: boolean): void => {
    if (live === next) return
    live = next
    for (const watcher of watchers) {
      if (next) watcher.live()
      else watcher.interrupted()
    }
  }

  const open = (): RedisClient => {
    const connection = duplicateForSubscribing(redis, `${channel}-watcher`)
    connection.on('error', () => {})
    connection.on('ready', () => {
      connection.subscribe(channel).then(() => { setLive(true) }, () => { connection.disconnect(true) })
    })
    connection.on('close', () => { setLive(false) })
    connection.on('message', (from: string, message: string) => {
      if (from !== channel || message === '') return
      const hashes = message.split(' ')
      for (const watcher of watchers) watcher.revoked(hashes)
    })
    return connection
  }

  // A half-open connection (a NAT drop, a failover without a reset) looks live forever: ping it,
  // and a ping unanswered in time cuts it, so watchers hear `interrupted` and drop their caches.
  const heartbeat = setInterval(() => {
    const connection = subscriber
    if (connection === undefined || !live) return
    withTimeout(connection.ping(), HEARTBEAT_TIMEOUT_MS, () => { throw new Error('ping timeout') })
      .catch(() => { if (subscriber === connection) connection.disconnect(true) })
  }, HEARTBEAT_INTERVAL_MS)
  heartbeat.unref()

  return {
    watch (watcher) {
      watchers.add(watcher)
      subscriber ??= open()
      if (live) watcher.live()
      return () => { watchers.delete(watcher) }
    },
    async close () {
      clearInterval(heartbeat)
      watchers.clear()
      const connection = subscriber
      subscriber = undefined
      live = false
      if (connection !== undefined) await connection.quit().catch(() => { connection.disconnect() })
    }
  }
}
