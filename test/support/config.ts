import { loadConfig, type Config } from '../../src/config/config.js'
import type { Argon2Policy } from '../../src/passwords/hasher.js'

/**
 * argon2id at its cheapest (8 KiB, one pass): a verify costs tens of microseconds instead of
 * tens of milliseconds, which is most of what the fast suite spent on Logins.
 * The service's own floor (OWASP's m=19456, t=2) binds the environment, not this override;
 * the files whose subject is the hashing itself (its parameters, its cost, its timing) call
 * useRealArgon2() first.
 */
export const CHEAP_ARGON2: Argon2Policy = Object.freeze({ memoryCost: 8, timeCost: 1, parallelism: 1 })

let realArgon2 = false

/** For this test file (one process): the service's default argon2 policy, not CHEAP_ARGON2. */
export function useRealArgon2 (): void {
  realArgon2 = true
}

/** The service's defaults, as a clean environment gives them, with a test's changes. */
export function testConfig (overrides: Partial<Config> = {}): Config {
  return loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent' }, realArgon2 ? overrides : { argon2: CHEAP_ARGON2, ...overrides })
}
