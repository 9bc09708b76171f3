/**
 * Escaping of user input placed into LDAP strings, so that a username can never
 * widen a search or change a DN.
 */

/** RFC 4515 §3: a value inside a search filter. `*`, `(`, `)`, `\` and NUL become `\XX`. */
export function escapeFilterValue (value: string): string {
  // eslint-disable-next-line no-control-regex -- NUL is one of the characters RFC 4515 escapes
  return value.replace(/[*()\\\u0000]/g, (c) => `\\${c.charCodeAt(0).toString(16).padStart(2, '0')}`)
}

/**
 * RFC 4514 §2.4: a value of a DN's attribute. The specials `"` `+` `,` `;` `<` `=` `>` `\`
 * get a backslash; NUL becomes `\00`; a leading `#` or space and a trailing space are escaped.
 */
export function escapeDnValue (value: string): string {
  // eslint-disable-next-line no-control-regex -- NUL is escaped in a DN value (RFC 4514)
  let escaped = value.replace(/["+,;<=>\\]/g, (c) => `\\${c}`).replace(/\u0000/g, '\\00')
  if (escaped.startsWith('#') || escaped.startsWith(' ')) escaped = `\\${escaped}`
  if (escaped.endsWith(' ') && !escaped.endsWith('\\ ')) escaped = `${escaped.slice(0, -1)}\\ `
  return escaped
}

/** Puts an escaped username into a template's `{username}` places (every one of them). */
export function fillTemplate (template: string, escapedUsername: string): string {
  return template.replaceAll('{username}', escapedUsername)
}

/**
 * The group filter (AUTH_LDAP_GROUP_FILTER) for one person: `{dn}` and `{username}` become their
 * values escaped for a filter, in one pass, so that a value holding `{dn}` stays text.
 */
export function fillGroupFilter (template: string, person: { dn: string, username: string }): string {
  return template.replace(/\{(dn|username)\}/g, (_, name: 'dn' | 'username') => escapeFilterValue(person[name]))
}
