import { setTimeout as sleep } from 'node:timers/promises'
import type { AdminSettings } from '../config/parts/admin.js'
import type { DatabaseSettings } from '../config/parts/database.js'
import { readLocalAdminAccess } from '../admin/local-access.js'
import { createAdminClient, type AdminClient } from '../admin/client.js'
import { findDataDirOwner } from '../db/data-dir-lock.js'

/**
 * Where the account and session commands go: the admin API of a running service, when there is
 * one to reach, else (undefined) the database itself, as before the admin API. AUTH_ADMIN_URL
 * names it outright (with AUTH_ADMIN_KEY or AUTH_ADMIN_KEY_FILE); on the embedded database, the
 * service that holds the data directory left its internal URL and a key there (admin/local-access.ts).
 */
export async function adminRoute (config: Pick<AdminSettings, 'adminUrl' | 'adminKey'> & Pick<DatabaseSettings, 'databaseUrl' | 'dataDir'>): Promise<AdminClient | { problem: string } | undefined> {
  if (config.adminUrl !== undefined) {
    if (config.adminKey === undefined) return { problem: 'AUTH_ADMIN_URL is set without AUTH_ADMIN_KEY or AUTH_ADMIN_KEY_FILE: the admin API needs its key' }
    return createAdminClient({ url: config.adminUrl, key: config.adminKey })
  }
  if (config.databaseUrl !== undefined) return undefined
  const started = Date.now()
  for (;;) {
    const owner = await findDataDirOwner(config.dataDir)
    if (owner?.command !== 'serve') return undefined
    const access = await readLocalAdminAccess(config.dataDir)
    // A file left by an earlier service that the lock's new holder has not replaced yet is not this one's.
    if (access !== undefined && (owner.internalUrl === null || owner.internalUrl === access.url)) return createAdminClient({ url: access.url, key: access.key })
    // A service still starting (a fresh database is made in a few seconds) writes it when it listens: wait for that.
    if (owner.url !== null || Date.now() - started > STARTING_WAIT_MS) return undefined
    await sleep(200)
  }
}

/** How long a command waits for a starting service's admin access before it says the directory is in use. */
const STARTING_WAIT_MS = 30_000
