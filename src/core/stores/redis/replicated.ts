import { UnavailableError } from '../../../errors/status.js'
import type { RedisClient } from '@auth-token-service/protocol/redis-connection'
import type { ReplicaAcks } from './replica-acks.js'

/** No replica acknowledged a revocation in time: it holds on the master, but a failover could lose it. */
export class ReplicaAckTimeout extends Error {
  readonly timeoutMs: number
  constructor (timeoutMs: number) {
    super(`no replica acknowledged the revocation within ${timeoutMs} ms`)
    this.timeoutMs = timeoutMs
    this.name = 'ReplicaAckTimeout'
  }
}

/**
 * Resolves once a revocation written to `key` is on enough replicas; `replicas`: the ones
 * connected to its master, as the script that wrote it counted them.
 */
export type Replicated = (key: string, replicas: number) => Promise<void>

/**
 * A revocation acknowledged to a client must survive a failover: when the master
 * that took it (the node serving `key`'s slot) has or is meant to have replicas
 * (replica-acks.ts: a cut-off replica counts), WAIT on the connection that wrote it until
 * enough have it; none in time is a 503 (ReplicaAckTimeout), never a `Success` a failover
 * could undo. The routing to that node is ioredis's: a pipeline whose first command names
 * `key` goes to the master of its slot, the keyless WAIT with it.
 */
export function createReplicationWait (redis: RedisClient, acks: ReplicaAcks, ackTimeoutMs: number): Replicated {
  return async (key, replicas) => {
    const needed = await acks.required(key, replicas)
    if (needed === 0) return
    // The PTTL routes the pipeline (and the keyless WAIT in it) to that node's connection.
    const waited = await redis.pipeline().pttl(key).wait(needed, ackTimeoutMs).exec()
    const acknowledged = waited?.[1]?.[1]
    if (typeof acknowledged !== 'number' || acknowledged < needed) {
      acks.stale()
      throw new UnavailableError('redis', new ReplicaAckTimeout(ackTimeoutMs), { 'retry-after': '1' })
    }
  }
}
