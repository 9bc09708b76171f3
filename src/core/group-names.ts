/**
 * Group names (api-contract, Groups and access rules): 1–64 characters of `a-z 0-9 . _ -`,
 * starting with a letter or a digit, compared as given. Such a name never holds `|`, `;` or `,`,
 * so a token's record carries a set of them as it is (protocol layout.ts), and a gateway's
 * `X-Auth-Groups: a,b` splits on the comma without quoting.
 */

export const GROUP_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/

/** The rule in words, for a log line (the admin API's 400 says it in errors/reasons.ts). */
export const GROUP_NAME_RULE = '1 to 64 characters of a-z, 0-9, ".", "_" and "-", starting with a letter or a digit'

/** Groups one account may be in: a token's record carries them all, read by every Authenticate. */
export const MAX_GROUPS_PER_ACCOUNT = 100

export function isGroupName (name: string): boolean {
  return GROUP_NAME.test(name)
}

/**
 * A directory's group name as one of ours: lower-cased, every run of other characters one `-`,
 * and `-` trimmed from the start (`Domain Admins` → `domain-admins`, `Ops/EU` → `ops-eu`). Cut to
 * 64 characters. Undefined when nothing of it is left (a name of punctuation only): the caller
 * says so in its log, never drops it silently.
 */
export function mappedGroupName (directoryName: string): string | undefined {
  // Accents go with their marks (`Développeurs` → `developpeurs`), then the rest of the mapping.
  const mapped = directoryName.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[._-]+/, '')
    .slice(0, 64)
    .replace(/-+$/, '')
  return isGroupName(mapped) ? mapped : undefined
}

/** A set of names, each once, in the order every answer gives them (code-unit order: the same everywhere). */
export function sortedGroups (names: Iterable<string>): string[] {
  return [...new Set(names)].sort()
}
