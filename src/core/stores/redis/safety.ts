import { UnavailableError } from '../../../errors/status.js'
import type { RedisClient } from '@auth-token-service/protocol/redis-connection'
import { evictingPolicy, EvictionPolicyError } from './eviction.js'
import { LossyPersistenceError, readPersistence, undoesRevocations, type Persistence } from './persistence.js'

export interface SafetyOptions {
  /** Check at all (a guard, which only reads, turns it off). */
  requireNoEviction: boolean
  acceptLossyPersistence: boolean | undefined
  onEvictionPolicy: ((error: EvictionPolicyError) => void) | undefined
  onPersistence: ((persistence: Persistence, refused: LossyPersistenceError | undefined) => void) | undefined
}

/**
 * Whether this Redis may be served from: an evicting one may drop what revocations rely on
 * (eviction.ts); a lossy one may bring ended tokens back on a restart (persistence.ts).
 * Read when the connection is (re)established, at every readiness ping and every 10 s.
 */
export interface Safety {
  /** Either refusal, or undefined while serving is safe. */
  refusal (): Error | undefined
  /** The lossy persistence alone (a revocation acknowledged on it is a promise not kept), or undefined. */
  lossy (): LossyPersistenceError | undefined
  /** Throws the refusal as a 503. */
  refuseWhileUnsafe (): void
  /** Reads the persistence now (and refuses or serves by it). */
  checkPersistence (): Promise<Persistence>
  /** Reads the eviction policy and the persistence now (when checking at all). */
  check (): Promise<void>
  /** The persistence last read; undefined before the first. */
  readonly lastPersistence: Persistence | undefined
  close (): void
}

export function createSafety (redis: RedisClient, options: SafetyOptions): Safety {
  let evicting: EvictionPolicyError | undefined
  let persisting: Persistence | undefined
  let lossy: LossyPersistenceError | undefined
  const checkPersistence = async (): Promise<Persistence> => {
    const found = await readPersistence(redis)
    const before = persisting
    persisting = found
    lossy = undoesRevocations(found) && options.acceptLossyPersistence !== true ? new LossyPersistenceError(found) : undefined
    if (before !== undefined && before.settings !== found.settings) options.onPersistence?.(found, lossy)
    return found
  }
  const checkPolicy = async (): Promise<void> => {
    const [policy] = await Promise.all([evictingPolicy(redis), checkPersistence()])
    const before = evicting
    evicting = policy === undefined ? undefined : new EvictionPolicyError(policy)
    if (evicting !== undefined && before?.policy !== evicting.policy) options.onEvictionPolicy?.(evicting)
  }
  const refusal = (): Error | undefined => evicting ?? lossy
  let timer: NodeJS.Timeout | undefined
  if (options.requireNoEviction) {
    redis.on('ready', () => { checkPolicy().catch(() => {}) })
    timer = setInterval(() => { if (redis.status === 'ready') checkPolicy().catch(() => {}) }, 10_000)
    timer.unref()
  }
  return {
    refusal,
    lossy: () => lossy,
    refuseWhileUnsafe () {
      const refused = refusal()
      if (refused !== undefined) throw new UnavailableError('redis', refused)
    },
    checkPersistence,
    check: async () => { if (options.requireNoEviction) await checkPolicy() },
    get lastPersistence () { return persisting },
    close () { clearInterval(timer) }
  }
}
