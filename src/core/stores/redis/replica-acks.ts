import { Cluster, Redis } from 'ioredis'
import type { RedisClient } from '@auth-token-service/protocol/redis-connection'
import type { MinReplicaAcks } from '../../../config/parts/redis.js'

/*
 * How many replicas must acknowledge a revocation before it is answered `Success`. Counting only the
 * connected replicas, 11-14 of 30 acknowledged Logouts came back after a failover whose promoted
 * replica had been cut off as they were written.
 *
 * A master's `connected_slaves` counts only the replicas linked to it now: a replica cut off
 * (a partition, a stalled process) is not counted, so a revocation written then would be
 * acknowledged with no copy anywhere, and the promotion of that very replica undoes it. So the
 * count comes from what the topology says a master is MEANT to have, which lists a replica
 * whatever its link state:
 *   - Cluster: CLUSTER NODES (any node) lists every replica of every master, flags `fail` and a
 *     disconnected link included, until an operator runs CLUSTER FORGET;
 *   - Sentinel: SENTINEL REPLICAS <name> lists every replica the sentinels have seen, `s_down`
 *     and `disconnected` included, until SENTINEL RESET;
 *   - a plain URL: nothing lists a replica that is not connected, so only the setting
 *     (AUTH_REDIS_MIN_REPLICA_ACKS) can say one is meant; without it, the connected ones count.
 * A master meant to have any replica needs one acknowledgement (Redis Cluster and Sentinel both
 * promote the replica with the most recent data, so the one that acknowledged is the one chosen);
 * a number set explicitly is required of every master as it is.
 *
 * Cost on the healthy path: none beyond the WAIT the revocation already did. The topology is
 * learned by the first revocation, then cached: relearned in the background by a revocation
 * that finds it older than `refreshMs`, or marked stale since nodes came or went (the cluster
 * client's +node/-node) or a WAIT fell short (a topology that may have changed). A replica
 * added since is covered meanwhile by the connected count; only one added and cut off within
 * `refreshMs` of the last view could be missed.
 */

export type { MinReplicaAcks }

export interface ReplicaAcks {
  /**
   * The acknowledgements a revocation written on the master serving `key` needs before it may
   * be answered `Success`. `connected`: the replicas that master has linked now (a replica
   * linked counts even where the topology is not yet relearned).
   */
  required (key: string, connected: number): Promise<number>
  /** A WAIT fell short: relearn the topology before the next revocation relies on it. */
  stale (): void
  close (): void
}

export interface ReplicaAcksOptions {
  /** How old a learned topology may be before a revocation relearns it in the background (default 5 s). */
  refreshMs?: number
  /** Upper bound on a sentinel's answer (default 500 ms). */
  commandTimeoutMs?: number
}

const SLOTS = 16384

/** Redis Cluster's key slot: CRC16 (XMODEM) of the key, or of its first non-empty `{hash tag}`. */
export function keySlot (key: string): number {
  let bytes = Buffer.from(key)
  const open = bytes.indexOf(0x7b)
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1)
    if (close > open + 1) bytes = bytes.subarray(open + 1, close)
  }
  let crc = 0
  for (const byte of bytes) {
    crc ^= byte << 8
    for (let bit = 0; bit < 8; bit++) crc = (crc & 0x8000) !== 0 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
  }
  return crc % SLOTS
}

/**
 * The replicas each slot's master is meant to have, from CLUSTER NODES: every line naming that
 * master as its master counts, whatever its flags (fail, pfail, a link down).
 */
export function meantReplicasBySlot (clusterNodes: string): Uint8Array {
  const lines = clusterNodes.split('\n').map((line) => line.trim().split(' ')).filter((fields) => fields.length >= 8)
  const replicasOf = new Map<string, number>()
  for (const fields of lines) {
    const master = fields[3] ?? '-'
    if (master !== '-') replicasOf.set(master, (replicasOf.get(master) ?? 0) + 1)
  }
  const bySlot = new Uint8Array(SLOTS)
  for (const fields of lines) {
    const meant = Math.min(255, replicasOf.get(fields[0] ?? '') ?? 0)
    for (const range of fields.slice(8)) {
      if (range.startsWith('[')) continue // a slot being migrated or imported: its owner lists it plainly too
      const [from, to] = range.split('-').map(Number)
      if (from === undefined || Number.isNaN(from)) continue
      bySlot.fill(meant, from, Math.min(SLOTS, (to ?? from) + 1))
    }
  }
  return bySlot
}

/** Learns, caches and refreshes what one topology says; `learn` resolves to its answer. */
function cached<T> (learn: () => Promise<T>, refreshMs: number): { get (): Promise<T>, stale (): void } {
  let known: T | undefined
  let learnedAt = 0
  let pending: Promise<T> | undefined
  const relearn = (): Promise<T> => {
    pending ??= learn().then((value) => {
      known = value
      learnedAt = Date.now()
      return value
    }).finally(() => { pending = undefined })
    return pending
  }
  return {
    async get () {
      // Never known: wait for it (an answer that cannot be had is a 503, not a guess). Known:
      // never wait for a relearn, which may be asking the very node that stalls (a revocation
      // would wait out its timeout for a view that a connected replica covers anyway).
      if (known === undefined) return await relearn()
      if (Date.now() - learnedAt > refreshMs) relearn().catch(() => {})
      return known
    },
    // Only marked: the next revocation (which the client served, so it is connected) relearns.
    // A command sent from the client's own events, while it connects, stalled its connecting.
    stale () { learnedAt = 0 }
  }
}

/** SENTINEL REPLICAS <name> of the first sentinel that answers: every replica listed, whatever its flags. */
async function sentinelReplicas (client: Redis, timeoutMs: number): Promise<number> {
  const { sentinels, name, sentinelUsername, sentinelPassword, enableTLSForSentinelMode, sentinelTLS } = client.options
  let lastError: unknown = new Error('no sentinel configured')
  for (const sentinel of sentinels ?? []) {
    const connection = new Redis({
      host: sentinel.host ?? '127.0.0.1',
      port: sentinel.port ?? 26379,
      username: sentinelUsername,
      password: sentinelPassword,
      ...(enableTLSForSentinelMode === true ? { tls: sentinelTLS } : {}),
      lazyConnect: true,
      connectTimeout: timeoutMs,
      commandTimeout: timeoutMs,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null
    })
    connection.on('error', () => {})
    try {
      await connection.connect()
      const replicas = await connection.call('SENTINEL', 'REPLICAS', name ?? 'mymaster')
      return Array.isArray(replicas) ? replicas.length : 0
    } catch (error) {
      lastError = error
    } finally {
      connection.disconnect()
    }
  }
  throw lastError
}

/**
 * The rule for `redis` (a Cluster, a Sentinel-managed Redis or a plain one, as the client was
 * made): see the top of this file.
 */
export function createReplicaAcks (redis: RedisClient, setting: MinReplicaAcks, options: ReplicaAcksOptions = {}): ReplicaAcks {
  const connectedRule = (connected: number): number => connected > 0 ? 1 : 0
  if (setting !== 'auto') {
    return { required: async (_key, connected) => Math.max(setting, connectedRule(connected)), stale () {}, close () {} }
  }
  const refreshMs = options.refreshMs ?? 5000
  if (redis instanceof Cluster) {
    const slots = cached(async () => meantReplicasBySlot(String(await redis.cluster('NODES'))), refreshMs)
    const onChange = (): void => { slots.stale() }
    redis.on('+node', onChange)
    redis.on('-node', onChange)
    return {
      required: async (key, connected) => Math.max(Math.min(1, (await slots.get())[keySlot(key)] ?? 0), connectedRule(connected)),
      stale: () => { slots.stale() },
      close () {
        redis.off('+node', onChange)
        redis.off('-node', onChange)
      }
    }
  }
  if ((redis.options.sentinels?.length ?? 0) > 0) {
    const timeoutMs = options.commandTimeoutMs ?? 500
    const replicas = cached(async () => await sentinelReplicas(redis, timeoutMs), refreshMs)
    return {
      required: async (_key, connected) => Math.max(Math.min(1, await replicas.get()), connectedRule(connected)),
      stale: () => { replicas.stale() },
      close () {}
    }
  }
  // A plain URL: only the replicas linked now can be known (docs/scaling.md: set the number when the master has any).
  return { required: async (_key, connected) => connectedRule(connected), stale () {}, close () {} }
}
