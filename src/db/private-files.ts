import { chmod, lstat, mkdir, readdir } from 'node:fs/promises'
import { join } from 'node:path'

/**
 * The embedded database's directory holds the password hashes (in its WAL and tables) and the
 * local admin key: it is the service account's alone. The directory is 0700 and nothing in it
 * grants group or other any access, whatever the process umask says.
 */

/** Group and other: every permission bit. */
export const SHARED_BITS = 0o077

/**
 * Creates `dir` 0700, or takes group and other access away from it when it has some (a
 * directory made by an earlier version, or by hand). Returns 1 when it was tightened, else 0.
 */
export async function privateDirectory (dir: string): Promise<number> {
  await mkdir(dir, { recursive: true, mode: 0o700 })
  return await tightenEntry(dir)
}

/**
 * Takes group and other access away from everything in `dir` (not the directory itself), for
 * its owner to call once it holds it: a directory an earlier version left readable. Returns how
 * many entries were tightened.
 */
export async function privateContents (dir: string): Promise<number> {
  let tightened = 0
  for (const entry of await readdir(dir)) {
    const path = join(dir, entry)
    tightened += await tightenEntry(path)
    if (await isDirectory(path)) tightened += await privateContents(path)
  }
  return tightened
}

const isGone = (error: unknown): boolean => typeof error === 'object' && error !== null && 'code' in error && error.code === 'ENOENT'

async function isDirectory (path: string): Promise<boolean> {
  return await lstat(path).then((stats) => stats.isDirectory(), () => false)
}

async function tightenEntry (path: string): Promise<number> {
  try {
    const stats = await lstat(path)
    // A symlink's own mode means nothing on Linux, and following one could change files elsewhere.
    if (stats.isSymbolicLink() || (stats.mode & SHARED_BITS) === 0) return 0
    await chmod(path, stats.mode & 0o7777 & ~SHARED_BITS)
    return 1
  } catch (error) {
    // Gone meanwhile (a temporary file renamed): nothing left to protect.
    if (isGone(error)) return 0
    throw error
  }
}
