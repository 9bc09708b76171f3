import { normalizeUsername, usernameProblem } from './credentials.js'
import type { Queryable } from '../db/database.js'

/**
 * Accounts made before usernames had one canonical form (src/core/usernames.ts) may be stored
 * as `Alice` or `alice ` or side by side with `alice`. `migrate` renames each to its
 * canonical form when that names nobody else, and reports, without touching them, the
 * accounts that would become one (never merged silently: they may be two people) and the
 * names that cannot be canonical at all (a space or an invisible character in them).
 */
export interface UsernameReport {
  /** Accounts renamed to their canonical form. */
  renamed: Array<{ id: string, from: string, to: string }>
  /** Accounts whose canonical forms are the same: left as they are, for an operator to resolve. */
  collisions: Array<{ canonical: string, accounts: Array<{ id: string, username: string }> }>
  /** Accounts whose name has no canonical form: left as they are (they cannot log in). */
  refused: Array<{ id: string, username: string }>
}

export async function canonicalizeUsernames (db: Queryable): Promise<UsernameReport> {
  const { rows } = await db.query<{ id: string, username: string }>('SELECT id::text AS id, username FROM users ORDER BY id')
  const report: UsernameReport = { renamed: [], collisions: [], refused: [] }
  const byCanonical = new Map<string, Array<{ id: string, username: string }>>()
  for (const row of rows) {
    const canonical = normalizeUsername(row.username)
    if (usernameProblem(canonical) !== undefined) {
      report.refused.push(row)
      continue
    }
    byCanonical.set(canonical, [...byCanonical.get(canonical) ?? [], row])
  }
  for (const [canonical, accounts] of byCanonical) {
    if (accounts.length > 1) {
      report.collisions.push({ canonical, accounts })
      continue
    }
    const [account] = accounts
    if (account === undefined || account.username === canonical) continue
    await db.query('UPDATE users SET username = $2, updated_at = now() WHERE id = $1', [account.id, canonical])
    report.renamed.push({ id: account.id, from: account.username, to: canonical })
  }
  return report
}
