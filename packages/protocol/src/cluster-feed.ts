import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import type { Cluster, Redis } from 'ioredis'
import { FEED_HEARTBEAT_MS, FEED_PROOF_MS, FEED_STALL_MS } from './feed.js'
import { duplicateForSubscribing, resubscribeDelayMs } from './redis-connection.js'
import { createFeedWatchers } from './feed-watchers.js'
import type { RevocationSubscription } from './redis-feed.js'

/** One heartbeat round: a nonce published on every master at `sentAt`, the ones not yet back. */
interface Round {
  sentAt: number
  awaiting: Set<string>
}

/**
 * The revocation feed on a Redis Cluster. A classic PUBLISH on any master reaches every node
 * over the cluster bus, so one subscription on any node hears every master: but only as late
 * as the bus carries it, and a PONG from the subscribed node proves only what that node had
 * received. So the proof of currency (feed.ts) is a round trip through every
 * master: each heartbeat publishes a nonce on every master (on a channel of this feed's own),
 * and only when all of them have come back on the subscribed connection is every revocation
 * published before the round known to be delivered (a master's messages keep their order on
 * the bus). A master that cannot answer (dead, before its failover) proves nothing: the
 * watchers' trust lapses, so a guard's cache goes cold, never wrong (test/integration/cluster/failover.test.ts).
 *
 * The subscription is a plain connection to one node of the cluster, picked afresh at each
 * (re)connection from the nodes the cluster client knows, and never silently moved: ioredis's
 * own cluster subscriber moves to another node on a cut without telling anyone, losing what
 * was published meanwhile while a cache went on trusting its entries. Here a cut is told
 * (`interrupted`), and no round completed for FEED_STALL_MS cuts the connection, so it is made
 * again, perhaps elsewhere (a frozen node, a half-open connection).
 */
export function createClusterRevocationFeed (cluster: Cluster, channel: string): RevocationSubscription {
  const watchers = createFeedWatchers()
  const heartbeatChannel = `${channel}:heartbeat:${randomBytes(12).toString('base64url')}`
  const rounds = new Map<number, Round>()
  let subscriber: Redis | undefined
  let reopening: NodeJS.Timeout | undefined
  let attempts = 0
  let round = 0
  let lastProofAt = 0
  let closed = false

  const reopenLater = (): void => {
    if (closed || reopening !== undefined) return
    reopening = setTimeout(() => {
      reopening = undefined
      open()
    }, resubscribeDelayMs(attempts++))
    reopening.unref()
  }

  const open = (): void => {
    if (closed || subscriber !== undefined) return
    const nodes = cluster.nodes('all')
    const node = nodes[Math.floor(Math.random() * nodes.length)]
    if (node === undefined) {
      // A lazy client that has not connected yet knows no node: connect it, and come back.
      if (cluster.status === 'wait') cluster.connect().catch(() => {})
      reopenLater()
      return
    }
    const connection = duplicateForSubscribing(node, `${channel}-watcher`, false)
    subscriber = connection
    connection.on('error', () => {})
    connection.on('ready', () => {
      connection.subscribe(channel, heartbeatChannel).then(() => {
        if (subscriber !== connection) return
        attempts = 0
        lastProofAt = performance.now()
        watchers.setLive(true)
      }, () => { connection.disconnect() })
    })
    connection.on('message', (from: string, message: string) => {
      if (subscriber !== connection) return
      if (from === channel) watchers.deliver(message)
      else if (from === heartbeatChannel) echoed(message)
    })
    connection.on('close', () => {
      if (subscriber !== connection) return
      subscriber = undefined
      rounds.clear()
      watchers.setLive(false)
      connection.disconnect()
      reopenLater()
    })
  }

  const echoed = (nonce: string): void => {
    const id = Number(nonce.slice(0, nonce.indexOf(' ')))
    const done = rounds.get(id)
    if (done === undefined || !done.awaiting.delete(nonce) || done.awaiting.size > 0) return
    // Every master's nonce is back: this round, and every older one, has nothing more to prove.
    for (const older of rounds.keys()) {
      rounds.delete(older)
      if (older === id) break
    }
    lastProofAt = performance.now()
    watchers.prove(FEED_PROOF_MS - (lastProofAt - done.sentAt))
  }

  const heartbeat = setInterval(() => {
    const connection = subscriber
    if (connection === undefined || !watchers.live) return
    const now = performance.now()
    if (now - lastProofAt > FEED_STALL_MS) {
      connection.disconnect()
      return
    }
    // A round older than a proof lasts can prove nothing any more.
    for (const [id, old] of rounds) {
      if (now - old.sentAt <= FEED_PROOF_MS) break
      rounds.delete(id)
    }
    const masters = cluster.nodes('master')
    if (masters.length === 0) return
    const id = ++round
    const awaiting = new Set(masters.map((_, index) => `${id} ${index}`))
    rounds.set(id, { sentAt: now, awaiting })
    for (const [index, master] of masters.entries()) master.publish(heartbeatChannel, `${id} ${index}`).catch(() => {})
  }, FEED_HEARTBEAT_MS)
  heartbeat.unref()

  return {
    watch (watcher) {
      if (subscriber === undefined && reopening === undefined) open()
      return watchers.add(watcher)
    },
    async close () {
      closed = true
      clearInterval(heartbeat)
      clearTimeout(reopening)
      watchers.clear()
      rounds.clear()
      const connection = subscriber
      subscriber = undefined
      if (connection !== undefined) await connection.quit().catch(() => { connection.disconnect() })
    }
  }
}
