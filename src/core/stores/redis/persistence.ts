import { Cluster } from 'ioredis'
import type { RedisClient } from '@auth-token-service/protocol/redis-connection'

/**
 * What the token Redis keeps across its own restart, and so what a restart can undo.
 *
 * A Logout deletes a token's key. A Redis that restarts from an older state than the one it
 * acknowledged (a snapshot taken before the Logout, an AOF whose last second never reached the
 * disk) brings the key back, and a token its owner believes ended works again. So:
 * - `durable`: AOF with `appendfsync always` (and fsync kept during rewrites): every write is
 *   on disk before Redis answers it, so nothing acknowledged is lost, a host crash included;
 * - `none`: no persistence at all (`save ""`, `appendonly no`): a restart comes back empty.
 *   Every token is gone (everyone logs in again), but no ended token can come back, so no
 *   revocation is undone;
 * - `lossy`: snapshots only, or AOF with `appendfsync everysec` / `no`: a restart (after a
 *   host crash, for AOF) can come back from a state older than the last acknowledged Logout;
 * - `unknown`: CONFIG is refused (renamed away, as on some managed Redis): nothing is known.
 * The service refuses `lossy` and `unknown` unless AUTH_REDIS_ACCEPT_LOSSY_PERSISTENCE says
 * the operator accepts the risk.
 */

export type Durability = 'durable' | 'none' | 'lossy' | 'unknown'

export interface Persistence {
  durability: Durability
  /** The settings read, e.g. `appendonly yes, appendfsync everysec` (on a Cluster, the worst master's). */
  settings: string
  /** What a restart of that Redis can lose, in words for the start line and readiness. */
  canLose: string
}

export const ACCEPT_LOSSY_VARIABLE = 'AUTH_REDIS_ACCEPT_LOSSY_PERSISTENCE'
const FIX = 'set appendonly yes and appendfsync always (redis-cli CONFIG SET appendonly yes; CONFIG SET appendfsync always; and in redis.conf), ' +
  `or turn persistence off (save "", appendonly no: a restart then ends every session), or set ${ACCEPT_LOSSY_VARIABLE}=true to accept the risk`

/** Redis persistence that can undo an acknowledged revocation: the service refuses to serve on it. */
export class LossyPersistenceError extends Error {
  readonly persistence: Persistence
  constructor (persistence: Persistence) {
    super(persistence.durability === 'unknown'
      ? `Redis persistence cannot be read (${persistence.settings}), so a Redis restart might bring logged-out tokens back; ${FIX}`
      : `Redis persistence (${persistence.settings}) can lose ${persistence.canLose}, so a Redis restart can bring logged-out tokens back; ${FIX}`)
    this.persistence = persistence
    this.name = 'LossyPersistenceError'
  }
}

const WORST: readonly Durability[] = ['unknown', 'lossy', 'none', 'durable']

/** One CONFIG GET; undefined when CONFIG is refused (an error reply, not a lost connection). */
async function setting (node: RedisClient, name: string): Promise<string | undefined> {
  try {
    const reply = await node.config('GET', name) as unknown
    return Array.isArray(reply) && typeof reply[1] === 'string' ? reply[1] : undefined
  } catch (error) {
    if (error instanceof Error && error.name === 'ReplyError') return undefined
    throw error
  }
}

async function persistenceOf (node: RedisClient): Promise<Persistence> {
  const [appendonly, appendfsync, noFsyncOnRewrite, save] = await Promise.all(
    ['appendonly', 'appendfsync', 'no-appendfsync-on-rewrite', 'save'].map(async (name) => await setting(node, name)))
  if (appendonly === undefined || save === undefined) {
    return { durability: 'unknown', settings: 'CONFIG GET refused', canLose: 'anything (unknown)' }
  }
  if (appendonly === 'yes') {
    const settings = `appendonly yes, appendfsync ${appendfsync ?? '?'}`
    if (appendfsync === 'always' && noFsyncOnRewrite === 'no') return { durability: 'durable', settings, canLose: 'no acknowledged write' }
    if (appendfsync === 'always') {
      return { durability: 'lossy', settings: `${settings}, no-appendfsync-on-rewrite yes`, canLose: 'the writes of an AOF rewrite or snapshot on a host crash, Logouts included' }
    }
    if (appendfsync === 'everysec') return { durability: 'lossy', settings, canLose: 'about the last second of writes on a host crash, Logouts included' }
    return { durability: 'lossy', settings, canLose: 'the writes the OS had not flushed on a host crash, Logouts included' }
  }
  if (save.trim() === '') {
    return { durability: 'none', settings: 'save "", appendonly no', canLose: 'every token on a restart (all sessions end; no revocation is undone)' }
  }
  return { durability: 'lossy', settings: `save "${save}", appendonly no`, canLose: 'every write since the last snapshot on any restart, Logouts included' }
}

/** The persistence of the token Redis: of every master of a Cluster, the one that can lose the most. */
export async function readPersistence (redis: RedisClient): Promise<Persistence> {
  const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis]
  const found = await Promise.all(nodes.map(persistenceOf))
  // A Cluster client that knows no master yet: a failed reading (down), asked again later.
  if (found.length === 0) throw new Error('no Redis master known yet')
  return found.reduce((worst, next) => WORST.indexOf(next.durability) < WORST.indexOf(worst.durability) ? next : worst)
}

/** Whether the service may serve on it: `durable` and `none` always, the others only when accepted. */
export const undoesRevocations = (persistence: Persistence): boolean =>
  persistence.durability === 'lossy' || persistence.durability === 'unknown'
