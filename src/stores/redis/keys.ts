import { TOKEN_DIGEST_LENGTH } from '../../tokens/token.js'

/*
 * Where a token hash's keys live (issue 23). The configured prefix (default `{ats}:`) holds a
 * hash tag; a bucket's keys carry the bucket inside it (`{atsAb}`), so one account's token keys,
 * index, epoch and deny entries share one Cluster slot, and 1,024 buckets spread the accounts
 * over every master (keys `{atsAb}t<digest>`, `{atsAb}a<accountId>`, ...: scripts.ts). A v2 hash is the bucket + the digest (24 characters: tokens/token.ts); any
 * other string (a v1 token's 22-character digest) lives under the prefix itself, in the one slot
 * every key shared before: the `legacy` place, where tokens issued before the change are found.
 */

const V2_HASH = new RegExp(`^[A-Za-z0-9_-]{${2 + TOKEN_DIGEST_LENGTH}}$`)

export interface Place {
  /** The bucket, or undefined for the legacy place. */
  bucket: string | undefined
  /** Prefix of every key of this place (`{atsAb}` or the configured prefix). */
  prefix: string
  /** What the place's keys and index entries name the token by (the digest; a legacy hash whole). */
  member: string
}

export interface KeyLayout {
  readonly legacyPrefix: string
  /** The prefix of a bucket's keys. */
  bucketPrefix (bucket: string): string
  /** Where a token hash lives. */
  placeOf (tokenHash: string): Place
  /** The hash a member of a place's index or deny set stands for. */
  hashOf (bucket: string | undefined, member: string): string
  /** The token key of a hash: what Authenticate GETs. */
  tokenKey (tokenHash: string): string
}

/**
 * The bucket goes inside the prefix's hash tag, and the `:` after the tag goes (`{ats}:` ->
 * `{atsAb}`); after an untagged prefix (a single Redis only), the bucket and a `:`. A bucket's
 * keys are `<b>t<digest>`, `<b>a<accountId>` ...: no separators, so that they are no longer
 * than the legacy `{ats}:t:<digest>`; 2 more characters put a token key in the next allocation
 * size (MEMORY USAGE 120 -> 136 B) and an active token at 316 B instead of 293.
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
  const placeOf = (tokenHash: string): Place => {
    if (!V2_HASH.test(tokenHash)) return { bucket: undefined, prefix, member: tokenHash }
    const bucket = tokenHash.slice(0, 2)
    return { bucket, prefix: bucketPrefix(bucket), member: tokenHash.slice(2) }
  }
  return {
    legacyPrefix: prefix,
    bucketPrefix,
    placeOf,
    hashOf: (bucket, member) => bucket === undefined ? member : `${bucket}${member}`,
    tokenKey (tokenHash) {
      const place = placeOf(tokenHash)
      return place.bucket === undefined ? `${prefix}t:${place.member}` : `${place.prefix}t${place.member}`
    }
  }
}
