import { availableParallelism } from 'node:os'
import { Type } from 'typebox'
import { variables, type Env } from '../variables.js'

/** argon2id operations at once by default: one per core but one, at least one, at most three. */
export function defaultHashConcurrency (cores: number): number {
  return Math.max(1, Math.min(cores - 1, 3))
}

/** The password policy, the argon2id cost, and how many hashes run and wait at once (src/passwords). */
export const PasswordsSchema = Type.Object({
  // NIST SP 800-63B: at least 8; 64 is the most a policy may ask (verifiers must take at least 64).
  AUTH_PASSWORD_MIN_LENGTH: Type.Integer({ minimum: 8, maximum: 64, default: 8, description: 'fewest characters of a password the service sets (NIST advises 15 for single-factor use, see [Security](security.md#password-policy))' }),
  // The floors are OWASP's minimum for argon2id (m=19456, t=2, p=1).
  AUTH_ARGON2_MEMORY_KIB: Type.Integer({ minimum: 19456, maximum: 4 * 1024 * 1024, default: 19456, description: 'argon2id memory cost (never below OWASP\'s minimum); older hashes are upgraded at the next login' }),
  AUTH_ARGON2_TIME_COST: Type.Integer({ minimum: 2, maximum: 100, default: 2, description: 'argon2id passes' }),
  AUTH_ARGON2_PARALLELISM: Type.Integer({ minimum: 1, maximum: 16, default: 1, description: 'argon2id lanes' }),
  // One core left to the event loop (Authenticate's), and never all four of libuv's default
  // threads: with every core hashing, a login storm tripled Authenticate's p99 (bench/README.md).
  AUTH_HASH_CONCURRENCY: Type.Optional(Type.Integer({ minimum: 1, maximum: 64, docDefault: 'the number of cores less one, at least `1`, at most `3`', description: 'argon2id hashes and verifies running at once; a core is left to the event loop, so a login storm does not slow Authenticate' })),
  AUTH_HASH_QUEUE_MAX: Type.Integer({ minimum: 0, maximum: 100_000, default: 64, description: 'hashes waiting beyond those; past it Login answers 503 with `Retry-After`' }),
  // Fair shares: no one account or client IP holds more of the slots and the queue.
  AUTH_HASH_ACCOUNT_RUNNING: Type.Integer({ minimum: 1, maximum: 64, default: 2, description: 'one account\'s share of the hashes running; beyond it that account\'s Logins answer 429 with `Retry-After`' }),
  AUTH_HASH_ACCOUNT_QUEUED: Type.Integer({ minimum: 0, maximum: 100_000, default: 8, description: 'one account\'s share of the hashes waiting' }),
  AUTH_HASH_IP_RUNNING: Type.Integer({ minimum: 1, maximum: 64, default: 4, description: 'one client IP\'s share of the hashes running (an address may be a NAT of many users)' }),
  AUTH_HASH_IP_QUEUED: Type.Integer({ minimum: 0, maximum: 100_000, default: 16, description: 'one client IP\'s share of the hashes waiting' })
}, { $id: 'passwords', title: 'Passwords and hashing', description: 'The password policy and argon2id: its cost, and how many hashes run and wait at once, with each account\'s and client IP\'s fair share.' })

export interface PasswordSettings {
  /** Fewest characters of a password this service sets (NIST SP 800-63B). */
  passwordMinLength: number
  argon2: { memoryCost: number, timeCost: number, parallelism: number }
  hashing: {
    concurrency: number
    maxQueued: number
    /** One account's share of those (running, waiting); beyond it that caller gets 429. A config built in code may leave it to the hasher's default. */
    perAccount?: { running: number, queued: number }
    /** One client IP's share. */
    perIp?: { running: number, queued: number }
  }
}

export function readPasswords (env: Env): PasswordSettings {
  const vars = variables(PasswordsSchema, env)
  return {
    passwordMinLength: vars.read('AUTH_PASSWORD_MIN_LENGTH'),
    argon2: {
      memoryCost: vars.read('AUTH_ARGON2_MEMORY_KIB'),
      timeCost: vars.read('AUTH_ARGON2_TIME_COST'),
      parallelism: vars.read('AUTH_ARGON2_PARALLELISM')
    },
    hashing: {
      concurrency: vars.read('AUTH_HASH_CONCURRENCY') ?? defaultHashConcurrency(availableParallelism()),
      maxQueued: vars.read('AUTH_HASH_QUEUE_MAX'),
      perAccount: { running: vars.read('AUTH_HASH_ACCOUNT_RUNNING'), queued: vars.read('AUTH_HASH_ACCOUNT_QUEUED') },
      perIp: { running: vars.read('AUTH_HASH_IP_RUNNING'), queued: vars.read('AUTH_HASH_IP_QUEUED') }
    }
  }
}
