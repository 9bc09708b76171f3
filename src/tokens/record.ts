/** What a token stands for, as the stores keep it and Authenticate answers it. */
export interface TokenRecord {
  accountId: string
  username: string
  federated: boolean
  /** Epoch milliseconds of the `expiration_date` the client was given. */
  expiresAt: number
  /** Set for an API key's record (issue 33): the key's public id. Absent: a Login token. */
  keyId?: string
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

/**
 * Compact, order-fixed value: `expiresAt|federated|accountId|username` (username last: it may hold
 * `|`). An API key's record has `k<keyId>` in the federated field: a reader that knows only tokens
 * still finds its account and username (and federated false), so older guards read it as a token.
 */
export function encodeRecord (record: TokenRecord): string {
  const second = record.keyId === undefined ? (record.federated ? '1' : '0') : `k${record.keyId}`
  return `${record.expiresAt}|${second}|${record.accountId}|${record.username}`
}

export function decodeRecord (value: string): TokenRecord | null {
  const first = value.indexOf('|')
  const second = value.indexOf('|', first + 1)
  const third = value.indexOf('|', second + 1)
  if (first < 0 || second < 0 || third < 0) return null
  const expiresAt = Number(value.slice(0, first))
  if (!Number.isFinite(expiresAt)) return null
  const flag = value.slice(first + 1, second)
  const record: TokenRecord = {
    expiresAt,
    federated: flag === '1',
    accountId: value.slice(second + 1, third),
    username: value.slice(third + 1)
  }
  if (flag.startsWith('k') && flag.length > 1) record.keyId = flag.slice(1)
  return record
}
