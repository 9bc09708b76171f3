import { randomBytes } from 'node:crypto'
import { open, readFile, rename, unlink } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { ADMIN_ACCESS_FILE_NAME } from '../db/data-dir-lock.js'

/**
 * How the command line reaches the admin API of the service that holds an embedded data
 * directory: the service writes, into that directory, its internal listener's URL and a key it
 * generated at start (mode 0600: only the account that runs the service, and root, read it).
 * So the embedded default has an admin API for the local command line with no AUTH_ADMIN_KEY.
 * The file is removed on a clean shutdown; one left by a killed service is ignored, since the
 * directory's lock (db/data-dir-lock.ts) says whether its writer still runs.
 */
export const LOCAL_ADMIN_FILE_NAME = ADMIN_ACCESS_FILE_NAME

export interface LocalAdminAccess {
  /** The internal listener's base URL, as reached from this machine. */
  url: string
  key: string
}

/** 256 bits from the CSPRNG, base64url: as unguessable as a token. */
export function generateLocalAdminKey (): string {
  return randomBytes(32).toString('base64url')
}

export async function writeLocalAdminAccess (dataDir: string, access: LocalAdminAccess): Promise<void> {
  const dir = resolve(dataDir)
  const temporary = join(dir, `${LOCAL_ADMIN_FILE_NAME}.${process.pid}.tmp`)
  // Created 0600 (never readable by others, not even for an instant), then renamed over the last one.
  const file = await open(temporary, 'w', 0o600)
  try {
    await file.writeFile(`${JSON.stringify(access)}\n`)
  } finally {
    await file.close()
  }
  await rename(temporary, join(dir, LOCAL_ADMIN_FILE_NAME))
}

export async function removeLocalAdminAccess (dataDir: string): Promise<void> {
  await unlink(join(resolve(dataDir), LOCAL_ADMIN_FILE_NAME)).catch(() => {})
}

/** What the file says, or undefined when there is none or it is not such a record. */
export async function readLocalAdminAccess (dataDir: string): Promise<LocalAdminAccess | undefined> {
  try {
    const value: unknown = JSON.parse(await readFile(join(resolve(dataDir), LOCAL_ADMIN_FILE_NAME), 'utf8'))
    if (typeof value !== 'object' || value === null) return undefined
    const { url, key } = value as Record<string, unknown>
    return typeof url === 'string' && typeof key === 'string' ? { url, key } : undefined
  } catch {
    return undefined
  }
}
