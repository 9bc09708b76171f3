/**
 * One canonical form per username, in the spirit of RFC 8265's UsernameCaseMapped profile:
 * what a person types in any width or case names one account, and what cannot be told apart
 * on a screen (spaces, controls, invisible and direction-changing characters) is refused
 * rather than stored. The canonical form is the account's only name: the key of storage,
 * lookup, lockout counters and the audit trail, and what Authenticate hands to other
 * services (docs/security.md, Canonical usernames: no second "display" form that could differ from it).
 */

/**
 * The Halfwidth and Fullwidth Forms block and the ideographic space: the characters whose
 * compatibility decomposition is <wide> or <narrow> (RFC 8265 §3.3.1 rule 1, width mapping).
 * Only these are mapped by NFKC; other compatibility characters are refused below.
 */
const WIDTH_VARIANT = /[\u3000\uFF01-\uFFEE]/gu

/**
 * Refused (RFC 8264 IdentifierClass: Controls, Spaces, Default_Ignorable and unassigned are
 * disallowed): controls, format characters (zero-width, soft hyphen, bidi overrides), every
 * whitespace, default-ignorable code points (variation selectors, fillers), surrogates left
 * alone, private use and unassigned code points (their meaning, and so their mapping, is unknown).
 */
const REFUSED = /[\p{Cc}\p{Cf}\p{White_Space}\p{Default_Ignorable_Code_Point}\p{Cs}\p{Co}\p{Cn}]/u

export type UsernameRefusal = 'empty' | 'refused-character' | 'compatibility-character'

export type CanonicalUsername =
  | { ok: true, username: string }
  | { ok: false, refusal: UsernameRefusal }

/** Width mapping, case mapping (toLowerCase, as RFC 8265 §3.3.1 rule 3 says), NFC: in RFC 8265's order. */
export function mapUsername (raw: string): string {
  return raw.replace(WIDTH_VARIANT, (c) => c.normalize('NFKC')).toLowerCase().normalize('NFC')
}

/** Why a mapped username (mapUsername) cannot be one, or undefined when it can. */
export function usernameRefusal (mapped: string): UsernameRefusal | undefined {
  if (mapped.length === 0) return 'empty'
  if (REFUSED.test(mapped)) return 'refused-character'
  // Other compatibility characters (ligatures, circled or superscript letters, the micro sign…)
  // look like letters they are not: RFC 8264 disallows them (HasCompat) rather than mapping.
  for (const c of mapped) {
    if (c.normalize('NFKC') !== c.normalize('NFC')) return 'compatibility-character'
  }
  return undefined
}

/**
 * The canonical form of a username, or why it cannot be one. Length limits are the caller's
 * (checked on the canonical form, so every spelling of a name meets the same limit).
 */
export function canonicalUsername (raw: string): CanonicalUsername {
  const username = mapUsername(raw)
  const refusal = usernameRefusal(username)
  return refusal === undefined ? { ok: true, username } : { ok: false, refusal }
}
