import { TOKEN_DIGEST_LENGTH } from '../../tokens/token.js'

/*
 * Where a token hash's keys live (issue 23). The configured prefix (default `{ats}:`) holds a
 * hash tag; a bucket's keys carry the bucket inside it (`{atsAb}`), so one account's token keys,
 * index, epoch and deny entries share one Cluster slot, and 1,024 buckets spread the accounts
 * over every master (keys `{atsAb}t<digest>`, `{atsAb}a<accountId>`, ...: scripts.ts). A token
 * hash is the bucket + the digest (24 characters: tokens/token.ts). Any other string names no
 * key: it is no token of ours (the layout of before 0.2.0, under the prefix itself, is gone:
 * issue 31 §2).
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
    tokenKey (tokenHash) {
      const key = keyOf(tokenHash)
      if (key === undefined) throw new TypeError('not a token hash: it names no key')
      return key
    }
  }
}
