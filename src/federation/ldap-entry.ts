import type { Entry } from 'ldapts'

/**
 * Reading what an entry, or a DN, says: directories answer attribute names in their own case
 * (`memberOf` asked as `memberof`), and values as text or bytes.
 */

/** The entry's values of `attribute`, its name matched ignoring case, bytes read as UTF-8. */
export function attributeValues (entry: Entry, attribute: string): string[] {
  const wanted = attribute.toLowerCase()
  const key = Object.keys(entry).find((name) => name !== 'dn' && name.toLowerCase() === wanted)
  const found = key === undefined ? undefined : entry[key]
  const values = found === undefined ? [] : Array.isArray(found) ? found : [found]
  return values.map((value) => typeof value === 'string' ? value : value.toString('utf8'))
}

const HEX_PAIR = /^[0-9a-fA-F]{2}$/

/**
 * The value the first RDN of `dn` (RFC 4514) gives `attribute`, unescaped: `Domain Admins` from
 * `CN=Domain Admins,CN=Users,DC=corp,DC=example` for `cn`, `a,b` from `cn=a\2Cb,…`. Undefined
 * when the first RDN names no such attribute (`ou=…`, an OID), gives it as `#` and BER bytes,
 * or does not parse: the caller reads the entry instead of guessing.
 */
export function firstRdnValue (dn: string, attribute: string): string | undefined {
  const wanted = attribute.toLowerCase()
  let at = 0
  // One attribute=value of the first RDN per round; `+` joins several (a multi-valued RDN).
  for (;;) {
    const equals = dn.indexOf('=', at)
    if (equals < 0) return undefined
    const type = dn.slice(at, equals).trim().toLowerCase()
    at = equals + 1
    while (dn[at] === ' ') at++
    if (dn[at] === '#' || dn[at] === '"') return undefined
    const bytes: number[] = []
    // Unescaped spaces at the end of a value are not part of it (RFC 4514 §3: they would be escaped).
    let significant = 0
    let separator: string | undefined
    while (at < dn.length) {
      const c = dn.charAt(at)
      if (c === ',' || c === '+' || c === ';') {
        separator = c
        at++
        break
      }
      if (c === '\\') {
        const pair = dn.slice(at + 1, at + 3)
        if (HEX_PAIR.test(pair)) {
          bytes.push(Number.parseInt(pair, 16))
          at += 3
        } else {
          const escaped = dn.codePointAt(at + 1)
          if (escaped === undefined) return undefined
          const char = String.fromCodePoint(escaped)
          bytes.push(...Buffer.from(char, 'utf8'))
          at += 1 + char.length
        }
        significant = bytes.length
        continue
      }
      const char = String.fromCodePoint(dn.codePointAt(at) ?? 0)
      bytes.push(...Buffer.from(char, 'utf8'))
      if (char !== ' ') significant = bytes.length
      at += char.length
    }
    if (type === wanted) {
      const value = Buffer.from(bytes.slice(0, significant)).toString('utf8')
      return value === '' ? undefined : value
    }
    if (separator !== '+') return undefined
  }
}
