/** What a token stands for, as the stores keep it and Authenticate answers it. */
export interface TokenRecord {
  accountId: string
  username: string
  federated: boolean
  /** Epoch milliseconds of the `expiration_date` the client was given. */
  expiresAt: number
}

/**
 * The record while its token is active by the service's clock: strictly before `expiresAt`,
 * the second `expiration_date` names. A key's PX counts from the moment of its write, a few
 * milliseconds after the instant the date was computed from, so the key alone would answer
 * Success just after the named second (issue 20 §5); this never does.
 */
export function activeAt (record: TokenRecord | null, nowMs: number): TokenRecord | null {
  return record !== null && nowMs < record.expiresAt ? record : null
}

/** Compact, order-fixed value: `expiresAt|federated|accountId|username` (username last: it may hold `|`). */
export function encodeRecord (record: TokenRecord): string {
  return `${record.expiresAt}|${record.federated ? 1 : 0}|${record.accountId}|${record.username}`
}

export function decodeRecord (value: string): TokenRecord | null {
  const first = value.indexOf('|')
  const second = value.indexOf('|', first + 1)
  const third = value.indexOf('|', second + 1)
  if (first < 0 || second < 0 || third < 0) return null
  const expiresAt = Number(value.slice(0, first))
  if (!Number.isFinite(expiresAt)) return null
  return {
    expiresAt,
    federated: value.slice(first + 1, second) === '1',
    accountId: value.slice(second + 1, third),
    username: value.slice(third + 1)
  }
}
