import { randomBytes } from 'node:crypto'
import argon2 from 'argon2'
import { createBoundedQueue, type BoundedQueue } from './bounded-queue.js'

export interface Argon2Policy {
  /** KiB of memory; OWASP's minimum for argon2id is 19456 with t=2, p=1. */
  memoryCost: number
  timeCost: number
  parallelism: number
}

export const OWASP_MINIMUM_POLICY: Argon2Policy = Object.freeze({ memoryCost: 19456, timeCost: 2, parallelism: 1 })

export interface PasswordHasher {
  hash (password: string): Promise<string>
  /** True when `password` matches `hash`; false for a mismatch or an unreadable hash. */
  verify (hash: string, password: string): Promise<boolean>
  /** Spend the time of a verify without an account, so unknown users cost what known ones do. */
  verifyDummy (password: string): Promise<void>
  needsRehash (hash: string): boolean
  /** Hashes running or waiting (a gauge for operators). */
  queueDepth (): number
}

export interface HashingLimits {
  /** Hashes at once; keep it below libuv's thread pool (4 by default) so other work keeps a thread. */
  concurrency: number
  /** Hashes allowed to wait; beyond that a login is refused with 503 and Retry-After. */
  maxQueued: number
}

export const DEFAULT_HASHING_LIMITS: HashingLimits = Object.freeze({ concurrency: 2, maxQueued: 64 })

/**
 * The PHC string with its parameters in the order the format requires (m, t, p).
 * node-argon2 0.4x writes `m=..,p=..,t=..` (ranisalt/node-argon2#559), which
 * libargon2's own decoder (PHP, argon2-cffi, most other verifiers) refuses; its
 * verify and needsRehash read either order.
 */
export function canonicalPhc (hash: string): string {
  return hash.replace(/^(\$argon2(?:id|i|d)\$v=\d+\$)m=(\d+),p=(\d+),t=(\d+)\$/, '$1m=$2,t=$4,p=$3$')
}

export function createPasswordHasher (policy: Argon2Policy = OWASP_MINIMUM_POLICY, limits: HashingLimits = DEFAULT_HASHING_LIMITS): PasswordHasher {
  const options = { type: argon2.argon2id, ...policy, hashLength: 32 } as const
  const queue: BoundedQueue = createBoundedQueue(limits.concurrency, limits.maxQueued)
  let dummyHash: Promise<string> | undefined

  async function verify (hash: string, password: string): Promise<boolean> {
    return await queue.run(async () => {
      try {
        return await argon2.verify(hash, password)
      } catch {
        // A malformed stored hash must never let anyone in.
        return false
      }
    })
  }

  return {
    hash: async (password) => await queue.run(async () => canonicalPhc(await argon2.hash(password, options))),
    verify,
    async verifyDummy (password) {
      // Made outside the queue, once; each use is a real verify through the queue like any other.
      dummyHash ??= argon2.hash(randomBytes(32).toString('base64url'), options)
      await verify(await dummyHash, password)
    },
    queueDepth: () => queue.depth(),
    needsRehash: (hash) => {
      try {
        return argon2.needsRehash(hash, policy)
      } catch {
        return true
      }
    }
  }
}
