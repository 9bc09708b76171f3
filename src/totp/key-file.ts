import { randomBytes } from 'node:crypto'
import { open, readFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { privateDirectory } from '../db/private-files.js'
import { TOTP_KEY_BYTES } from './sealed-secret.js'

/**
 * The TOTP key when neither AUTH_TOTP_KEY nor AUTH_TOTP_KEY_FILE is set: a file of its own in
 * the data directory (beside, never inside, the database), made at first use, mode 0600 from
 * its creation (never readable by others, not even for an instant). Another instance racing
 * to make it reads the one that won.
 */
export const TOTP_KEY_FILE_NAME = 'totp.key'

/** Base64 of exactly 32 bytes (`openssl rand -base64 32`), or undefined. */
export function parseTotpKey (text: string): Buffer | undefined {
  const trimmed = text.trim()
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)) return undefined
  const key = Buffer.from(trimmed, 'base64')
  return key.length === TOTP_KEY_BYTES ? key : undefined
}

export interface KeyFileOutcome {
  key: Buffer
  path: string
  /** This call made the file. */
  created: boolean
}

export async function loadOrCreateKeyFile (dataDir: string): Promise<KeyFileOutcome> {
  const dir = resolve(dataDir)
  const path = join(dir, TOTP_KEY_FILE_NAME)
  await privateDirectory(dir)
  try {
    const file = await open(path, 'wx', 0o600)
    const key = randomBytes(TOTP_KEY_BYTES)
    try {
      await file.writeFile(`${key.toString('base64')}\n`)
      await file.sync()
    } finally {
      await file.close()
    }
    return { key, path, created: true }
  } catch (error) {
    if (!(typeof error === 'object' && error !== null && 'code' in error && error.code === 'EEXIST')) throw error
  }
  const key = parseTotpKey(await readFile(path, 'utf8'))
  if (key === undefined) throw new Error(`${path} does not hold a 32-byte base64 key`)
  return { key, path, created: false }
}
