import { TOKEN_DIGEST_LENGTH } from './token.js'

/**
 * The token service's Redis layout, as the service writes it and direct mode reads it: one
 * module that both use, so the two cannot drift. A change to anything here (key
 * names, the record's fields, the channel) is a new KEY_LAYOUT_VERSION, and a guard reads
 * only the layout its version names: give a guard of the same layout version as the service.
 *
 *   token key        <bucket prefix>t<digest>   value: the record (encodeRecord), PX = the token's life
 *   record           `expiresAt|federated|accountId|username` (epoch ms, 1/0, username last);
 *                    an API key's record has `k<keyId>` for 1/0, at its hash's token key; an account
 *                    in groups has them after that field: `1;ops,dev` (sorted, comma-separated)
 *   revocation feed  PUBLISH <prefix>revoked "<hash> <hash> …" (space-separated token hashes)
 *   idle key         <bucket prefix>i<digest>   value `1`, PX = idle timeout + idleSlackMs: only while the
 *                    service runs with AUTH_IDLE_TIMEOUT_SECONDS; a Login token whose idle key is gone has
 *                    not been presented for that long and is refused (API keys have none)
 *
 * (The service's own keys beside them, the account index, epoch and deny set, the link from a token
 * to the tokens given out under it, are its business: src/core/stores/redis/scripts.ts; and the
 * OpenID Connect provider's artifacts, `<prefix>oidc1:<Model>:<SHA-256 of the id>` with their
 * indexes, versioned on their own by the `1` (src/oidc/service.ts ARTIFACT_LAYOUT_VERSION;
 * src/oidc/adapter.ts). A guard reads none of them.)
 */

/**
 * The layout's version: 2 is the bucketed layout of 0.2.0 (tokens `2…`, keys `{atsAb}t<digest>`).
 * The layout of before 0.2.0 (version 1) is gone: upgrades from before 0.2.0 go through 0.2.x
 * first. An API key's record (`k<keyId>` in the second field) is still 2: no key name, channel
 * or token record changed, and a reader of before it decodes a key's record as a non-federated
 * token of the same account. The idle key is still 2: it is written only when the idle timeout
 * is on, and a reader of before it (which does not look for it) only misses that timeout, as a
 * reader of this version given no `idleTimeout` does.
 */
export const KEY_LAYOUT_VERSION = 3
/*
 * 3 adds the account's groups to the record's second field (`0;ops,dev`), and the OpenID Connect
 * provider's access tokens (`o<clientId>`: a reader of 2 takes one for a non-federated token of
 * its account, which it is, without its client). A record of an account
 * in no group is byte for byte a record of 2, so a reader of 2 reads it as ever; a reader of 2
 * reads a grouped account's record as not federated (and an API key's id with the groups after
 * it), and knows no groups: upgrade guards with the service before accounts get groups.
 */

/**
 * Every key starts with this (the service's AUTH_REDIS_KEY_PREFIX default). The braces are a
 * hash tag: in a Redis Cluster a bucket's keys share one slot (the bucket goes inside the tag),
 * so each Lua script's keys are on one node. On a single Redis they are plain characters.
 */
export const DEFAULT_KEY_PREFIX = '{ats}:'

/** The channel revocations are published on (classic PUBLISH: a Cluster carries it to every node). */
export function revocationChannel (prefix: string): string {
  return `${prefix}revoked`
}

/*
 * Where a token hash's keys live. The configured prefix (default `{ats}:`) holds a
 * hash tag; a bucket's keys carry the bucket inside it (`{atsAb}`), so one account's token keys,
 * index, epoch and deny entries share one Cluster slot, and 1,024 buckets spread the accounts
 * over every master (keys `{atsAb}t<digest>`, `{atsAb}a<accountId>`, ...: the service's scripts.ts). A token
 * hash is the bucket + the digest (24 characters: token.ts). Any other string names no
 * key: it is no token of ours (the layout of before 0.2.0, under the prefix itself, is gone).
 */

const TOKEN_HASH = new RegExp(`^[A-Za-z0-9_-]{${2 + TOKEN_DIGEST_LENGTH}}$`)

export interface Place {
  /** The token's bucket (its account's). */
  bucket: string
  /** Prefix of every key of the bucket (`{atsAb}`). */
  prefix: string
  /** What the bucket's keys, index and deny entries name the token by: its digest. */
  member: string
}

export interface KeyLayout {
  /** The prefix of a bucket's keys. */
  bucketPrefix (bucket: string): string
  /** Where a token hash lives; undefined for a string that is no token hash (no key is ever named by it). */
  placeOf (tokenHash: string): Place | undefined
  /** The hash a member of a bucket's index or deny set stands for. */
  hashOf (bucket: string, member: string): string
  /** The token key of a hash (what Authenticate GETs); undefined for a string that is no token hash. */
  keyOf (tokenHash: string): string | undefined
  /** The token key of a hash; a TypeError for a string that is no token hash (a caller's mistake). */
  tokenKey (tokenHash: string): string
  /** The idle key of a hash (beside its token key, in its slot); undefined for a string that is no token hash. */
  idleKeyOf (tokenHash: string): string | undefined
}

/**
 * How much longer than the idle timeout an idle key lives when it is set: the service touches a
 * token's idle key at most once per this much time (per instance), so a token stops working
 * between the idle timeout and the idle timeout plus this after it was last presented, never
 * before. A tenth of the timeout, at least 100 ms, at most a minute (the contract's bound).
 */
export function idleSlackMs (idleTimeoutMs: number): number {
  return Math.min(60_000, Math.max(100, Math.floor(idleTimeoutMs / 10)))
}

/**
 * The bucket goes inside the prefix's hash tag, and the `:` after the tag goes (`{ats}:` ->
 * `{atsAb}`); after an untagged prefix (a single Redis only), the bucket and a `:`. A bucket's
 * keys are `<b>t<digest>`, `<b>a<accountId>` ...: no separators, so that they are no longer
 * than the layout of before 0.2.0 (`{ats}:t:<digest>`); 2 more characters put a token key in
 * the next allocation size (MEMORY USAGE 120 -> 136 B) and an active token at 316 B instead of 293.
 */
function withBucket (prefix: string, bucket: string): string {
  const open = prefix.indexOf('{')
  const close = open < 0 ? -1 : prefix.indexOf('}', open + 1)
  if (close > open + 1) {
    const rest = prefix.slice(close + 1)
    return `${prefix.slice(0, close)}${bucket}}${rest.startsWith(':') ? rest.slice(1) : rest}`
  }
  return `${prefix}${bucket}:`
}

export function keyLayout (prefix: string): KeyLayout {
  const prefixes = new Map<string, string>()
  const bucketPrefix = (bucket: string): string => {
    let found = prefixes.get(bucket)
    if (found === undefined) {
      found = withBucket(prefix, bucket)
      prefixes.set(bucket, found)
    }
    return found
  }
  const placeOf = (tokenHash: string): Place | undefined => {
    if (!TOKEN_HASH.test(tokenHash)) return undefined
    const bucket = tokenHash.slice(0, 2)
    return { bucket, prefix: bucketPrefix(bucket), member: tokenHash.slice(2) }
  }
  const keyOf = (tokenHash: string): string | undefined => {
    const place = placeOf(tokenHash)
    return place === undefined ? undefined : `${place.prefix}t${place.member}`
  }
  return {
    bucketPrefix,
    placeOf,
    hashOf: (bucket, member) => `${bucket}${member}`,
    keyOf,
    idleKeyOf (tokenHash) {
      const place = placeOf(tokenHash)
      return place === undefined ? undefined : `${place.prefix}i${place.member}`
    },
    tokenKey (tokenHash) {
      const key = keyOf(tokenHash)
      if (key === undefined) throw new TypeError('not a token hash: it names no key')
      return key
    }
  }
}

/** What a token stands for, as the stores keep it and Authenticate answers it. */
export interface TokenRecord {
  accountId: string
  username: string
  federated: boolean
  /** Epoch milliseconds of the `expiration_date` the client was given. */
  expiresAt: number
  /** Set for an API key's record: the key's public id. Absent: a Login token. */
  keyId?: string
  /**
   * The account's groups when the record was written (sorted; names of `a-z 0-9 . _ -`, so no
   * `|`, `;` or `,`). Absent or empty: none. The service rewrites a live record when the account's
   * groups change, so a read always carries the current set.
   */
  groups?: readonly string[]
  /**
   * Set for an access token the OpenID Connect provider gave out (layout 3: `o<clientId>` in the
   * second field): the client it went to. (Refresh tokens are the provider's alone, never here.)
   */
  oidc?: { clientId: string }
}

/**
 * Whether the idle timeout applies to the record's token: a Login token's only (API keys and the
 * OpenID Connect provider's short-lived access tokens have none: no idle key is ever set for them).
 */
export function idles (record: TokenRecord): boolean {
  return record.keyId === undefined && record.oidc === undefined
}

/**
 * The record while its token is active by the service's clock: strictly before `expiresAt`,
 * the second `expiration_date` names. A key's PX counts from the moment of its write, a few
 * milliseconds after the instant the date was computed from, so the key alone would answer
 * Success just after the named second; this never does.
 */
export function activeAt (record: TokenRecord | null, nowMs: number): TokenRecord | null {
  return record !== null && nowMs < record.expiresAt ? record : null
}

/** The record's second field without its groups: `1`/`0`, an API key's `k<keyId>`, an OpenID Connect token's `o`/`r<clientId>`. */
function kindField (record: TokenRecord): string {
  if (record.oidc !== undefined) return `o${record.oidc.clientId}`
  return record.keyId === undefined ? (record.federated ? '1' : '0') : `k${record.keyId}`
}

/** The groups as the record's second field carries them after `;` ('' for none). */
export function groupsField (groups: readonly string[] | undefined): string {
  return groups === undefined || groups.length === 0 ? '' : groups.join(',')
}

/**
 * Compact, order-fixed value: `expiresAt|federated|accountId|username` (username last: it may hold
 * `|`). An API key's record has `k<keyId>` in the federated field: a reader that knows only tokens
 * still finds its account and username (and federated false). The account's groups follow the
 * second field after a `;` (layout 3), never present when there are none.
 */
export function encodeRecord (record: TokenRecord): string {
  const groups = groupsField(record.groups)
  const second = groups === '' ? kindField(record) : `${kindField(record)};${groups}`
  return `${record.expiresAt}|${second}|${record.accountId}|${record.username}`
}

export function decodeRecord (value: string): TokenRecord | null {
  const first = value.indexOf('|')
  const second = value.indexOf('|', first + 1)
  const third = value.indexOf('|', second + 1)
  if (first < 0 || second < 0 || third < 0) return null
  const expiresAt = Number(value.slice(0, first))
  if (!Number.isFinite(expiresAt)) return null
  let flag = value.slice(first + 1, second)
  const semicolon = flag.indexOf(';')
  let groups: string[] | undefined
  if (semicolon >= 0) {
    groups = flag.slice(semicolon + 1).split(',')
    flag = flag.slice(0, semicolon)
  }
  const record: TokenRecord = {
    expiresAt,
    federated: flag === '1',
    accountId: value.slice(second + 1, third),
    username: value.slice(third + 1)
  }
  if (flag.length > 1) {
    if (flag.startsWith('k')) record.keyId = flag.slice(1)
    else if (flag.startsWith('o')) record.oidc = { clientId: flag.slice(1) }
  }
  if (groups !== undefined) record.groups = groups
  return record
}
