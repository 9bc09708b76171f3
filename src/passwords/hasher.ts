import { randomBytes } from 'node:crypto'
import { parseOptions, type Algorithm, type Version } from '@node-rs/argon2'
import { createFairQueue, type FairQueue, type HashCaller, type HashShare } from './fair-queue.js'
import { createHashWorkers, HashThreadError, type HashWorkers } from './hash-workers.js'
import { serviceUnavailable, StatusError } from '../errors/status.js'
import { inSpan } from '../tracing/spans.js'

export interface Argon2Policy {
  /** KiB of memory; OWASP's minimum for argon2id is 19456 with t=2, p=1. */
  memoryCost: number
  timeCost: number
  parallelism: number
}

export const OWASP_MINIMUM_POLICY: Argon2Policy = Object.freeze({ memoryCost: 19456, timeCost: 2, parallelism: 1 })

export type { HashCaller }

/**
 * `caller`: whom a Login's hash is for (account and client IP), so that no one of them takes
 * more than its share of the queue (passwords/fair-queue.ts): beyond it, 429 for that caller alone.
 */
export interface PasswordHasher {
  hash (password: string, caller?: HashCaller): Promise<string>
  /** True when `password` matches `hash`; false for a mismatch or an unreadable hash. */
  verify (hash: string, password: string, caller?: HashCaller): Promise<boolean>
  /** Spend the time of a verify without an account, so unknown users cost what known ones do. */
  verifyDummy (password: string, caller?: HashCaller): Promise<void>
  needsRehash (hash: string): boolean
  /** Hashes running or waiting (a gauge for operators). */
  queueDepth (): number
  /** Stops the hashing threads (operations still running fail). */
  close (): Promise<void>
}

export interface HashingLimits {
  /** Hashes at once: the number of hashing threads. */
  concurrency: number
  /** Hashes allowed to wait; beyond that a login is refused with 503 and Retry-After. */
  maxQueued: number
  /** One account's share of those (running, waiting); beyond it that caller gets 429. Default 2 and 8. */
  perAccount?: HashShare
  /** One client IP's share; default 4 and 16 (an address may be a NAT of many users). */
  perIp?: HashShare
}

export const DEFAULT_ACCOUNT_SHARE: HashShare = Object.freeze({ running: 2, queued: 8 })
export const DEFAULT_IP_SHARE: HashShare = Object.freeze({ running: 4, queued: 16 })
export const DEFAULT_HASHING_LIMITS: HashingLimits = Object.freeze({ concurrency: 2, maxQueued: 64 })

/**
 * The PHC string with its parameters in the order the format requires (m, t, p).
 * node-argon2 0.4x, this service's binding before @node-rs/argon2, wrote `m=..,p=..,t=..`
 * (ranisalt/node-argon2#559), which libargon2's own decoder (PHP, argon2-cffi, most other
 * verifiers) refuses. @node-rs/argon2 writes the canonical order and reads either, so
 * hashes stored by the old binding keep verifying; this stays as a guard on what is stored.
 */
export function canonicalPhc (hash: string): string {
  return hash.replace(/^(\$argon2(?:id|i|d)\$v=\d+\$)m=(\d+),p=(\d+),t=(\d+)\$/, '$1m=$2,t=$4,p=$3$')
}

// @node-rs/argon2 declares these as const enums, which isolated modules cannot read.
const ARGON2ID = 2 as Algorithm
const VERSION_0X13 = 1 as Version

/**
 * argon2id on @node-rs/argon2 (the RustCrypto implementation): at the same parameters and
 * PHC strings as node-argon2 it verified 1.7-2.1 times as fast here, raw and on the service's
 * own Login route (bench/README.md). It runs on `limits.concurrency` threads of low CPU
 * priority (hash-workers.ts), behind a bounded queue.
 */
export function createPasswordHasher (
  policy: Argon2Policy = OWASP_MINIMUM_POLICY,
  limits: HashingLimits = DEFAULT_HASHING_LIMITS,
  // The threads the queue hands its hashes to: the tests hand in ones that record the order the queue starts them in.
  workers: HashWorkers = createHashWorkers(limits.concurrency)
): PasswordHasher {
  const options = { algorithm: ARGON2ID, version: VERSION_0X13, ...policy, outputLen: 32 }
  const queue: FairQueue = createFairQueue({
    concurrency: limits.concurrency,
    maxQueued: limits.maxQueued,
    perAccount: limits.perAccount ?? DEFAULT_ACCOUNT_SHARE,
    perIp: limits.perIp ?? DEFAULT_IP_SHARE
  })
  let dummyHash: Promise<string> | undefined

  // The span covers the hash on its thread, not the wait in the queue before it (tracing on only).
  const spanAttributes = { 'argon2.memory_kib': policy.memoryCost, 'argon2.time_cost': policy.timeCost, 'argon2.parallelism': policy.parallelism }
  // No answer from a hashing thread is a 503 (nothing was decided), never a verdict on the password.
  const onThreads = async <T>(operation: 'hash' | 'verify', work: () => Promise<T>): Promise<T> =>
    await inSpan(`argon2.${operation}`, spanAttributes, async () => await work().catch((error: unknown) => {
      throw error instanceof HashThreadError ? serviceUnavailable('hash-thread', error) : error
    }))

  async function verify (hash: string, password: string, caller?: HashCaller): Promise<boolean> {
    return await queue.run(async () => {
      try {
        return await onThreads('verify', async () => await workers.verify(hash, password))
      } catch (error) {
        if (error instanceof StatusError) throw error
        // A malformed stored hash must never let anyone in.
        return false
      }
    }, caller)
  }

  return {
    hash: async (password, caller) => await queue.run(async () => canonicalPhc(await onThreads('hash', async () => await workers.hash(password, options))), caller),
    verify,
    async verifyDummy (password, caller) {
      // Made once; a failed attempt is forgotten, so one thread failure does not break every later call.
      dummyHash ??= queue.run(async () => await onThreads('hash', async () => await workers.hash(randomBytes(32).toString('base64url'), options)))
        .catch((error: unknown) => { dummyHash = undefined; throw error })
      await verify(await dummyHash, password, caller)
    },
    queueDepth: () => queue.depth(),
    close: async () => { await workers.close() },
    needsRehash: (hash) => {
      try {
        // As node-argon2's needsRehash: another version or other m, t or p than the policy's.
        const stored = parseOptions(hash)
        return stored.version !== VERSION_0X13 || stored.memoryCost !== policy.memoryCost ||
          stored.timeCost !== policy.timeCost || stored.parallelism !== policy.parallelism
      } catch {
        return true
      }
    }
  }
}
