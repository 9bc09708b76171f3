import type { DatabaseSettings } from '../config/parts/database.js'
import type { UsernameReport } from '../core/canonical-usernames.js'
import { EXIT, unreachable } from './exit-codes.js'

/** `migrate`: applies the SQL migrations, and says what it did on stderr. */
export async function runMigrate (config: DatabaseSettings): Promise<number> {
  const [{ openDatabase }, { migrate }] = await Promise.all([import('../db/open.js'), import('../core/migrate.js')])
  if (config.databaseUrl !== undefined) {
    // A new Postgres has no database of the URL's name: the first migrate makes it.
    const { ensureDatabase } = await import('../db/create-database.js')
    const { created, name } = await ensureDatabase(config.databaseUrl).catch((error: unknown) => { throw unreachable('the database (DATABASE_URL)', error) })
    if (created) process.stderr.write(`database "${name}" created on ${new URL(config.databaseUrl).host}\n`)
  }
  const database = await openDatabase(config, { command: 'migrate' })
  try {
    const { applied, usernames } = await migrate(database).catch((error: unknown) => { throw unreachable('the database (DATABASE_URL)', error) })
    process.stderr.write(applied.length === 0 ? 'migrations: up to date\n' : `migrations applied: ${applied.join(', ')}\n`)
    return reportUsernames(usernames)
  } finally {
    await database.close()
  }
}

/**
 * What `migrate` did to stored usernames. Accounts whose canonical forms collide are never
 * merged: they are listed, untouched, and the command fails until an operator resolves them
 * (docs/security.md, "Canonical usernames").
 */
function reportUsernames ({ renamed, collisions, refused }: UsernameReport): number {
  const name = (username: string): string => JSON.stringify(username)
  for (const { id, from, to } of renamed) process.stderr.write(`username of account ${id} made canonical: ${name(from)} -> ${name(to)}\n`)
  for (const { canonical, accounts } of collisions) {
    process.stderr.write(`accounts ${accounts.map(({ id, username }) => `${id} ${name(username)}`).join(', ')} are all ${name(canonical)} in canonical form: left as they are, not merged\n`)
  }
  for (const { id, username } of refused) process.stderr.write(`account ${id} ${name(username)} has no canonical form (a space, control or invisible character): left as it is, it cannot log in\n`)
  if (collisions.length === 0 && refused.length === 0) return EXIT.success
  process.stderr.write('auth-token-service: resolve the accounts above (rename or delete all but one of each group; see docs/security.md, Canonical usernames), then run migrate again\n')
  return EXIT.failure
}
