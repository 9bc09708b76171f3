/**
 * The Postgres look-ups each client may make for API keys the token store does not hold (a
 * record Redis lost): a token bucket per client address, so that one client sending unknown
 * `atsk_` values spends its own budget and no one else's. The buckets are bounded in number:
 * past `maxClients`, the one used longest ago is forgotten (a Map in order of use), so however
 * many addresses send, the memory stays a few hundred kilobytes; a client forgotten that way
 * comes back with a full bucket, which gives it no more than a new client gets.
 */
export interface RecoveryBudget {
  /** True, and one look-up spent, when `client` has one left now. */
  spend (client: string): boolean
  /** How many clients are tracked (bounded by `maxClients`). */
  readonly size: number
}

export interface RecoveryBudgetOptions {
  /** Look-ups a second each client gets back, and the most it can hold at once. */
  perSecond: number
  burst: number
  maxClients: number
  now: () => number
}

interface Bucket {
  tokens: number
  at: number
}

export function createRecoveryBudget ({ perSecond, burst, maxClients, now }: RecoveryBudgetOptions): RecoveryBudget {
  const buckets = new Map<string, Bucket>()
  return {
    spend (client) {
      const t = now()
      let bucket = buckets.get(client)
      if (bucket === undefined) {
        if (buckets.size >= maxClients) {
          const oldest = buckets.keys().next().value
          if (oldest !== undefined) buckets.delete(oldest)
        }
        bucket = { tokens: burst, at: t }
      } else {
        // Re-inserted: the Map's order is the order of use.
        buckets.delete(client)
        bucket.tokens = Math.min(burst, bucket.tokens + ((t - bucket.at) / 1000) * perSecond)
        bucket.at = t
      }
      buckets.set(client, bucket)
      if (bucket.tokens < 1) return false
      bucket.tokens -= 1
      return true
    },
    get size () { return buckets.size }
  }
}
