import type { DatabaseSettings } from '../config/parts/database.js'
import type { TotpSettings } from '../config/parts/totp.js'
import { loadOrCreateKeyFile } from './key-file.js'
import type { TotpKeys } from './sealed-secret.js'

type Log = { info (object: object, message: string): void }

/**
 * The sealing keys the config names, resolved once at first use: AUTH_TOTP_KEY (or its file),
 * else a key file made in the data directory, which the log names when it is made.
 */
export function totpKeySource (config: Pick<TotpSettings, 'totpKey' | 'totpPreviousKeys'> & Pick<DatabaseSettings, 'dataDir'>, log?: Log): () => Promise<TotpKeys> {
  let resolved: Promise<TotpKeys> | undefined
  return async () => {
    resolved ??= (async () => {
      if (config.totpKey !== undefined) return { current: config.totpKey, previous: config.totpPreviousKeys }
      const file = await loadOrCreateKeyFile(config.dataDir)
      if (file.created) log?.info({ path: file.path }, 'TOTP secrets are sealed with a key made in the data directory (mode 0600): back it up, or set AUTH_TOTP_KEY (docs/second-factor.md)')
      return { current: file.key, previous: config.totpPreviousKeys }
    })()
    // A failure (a directory not writable) is not kept: the next use tries again.
    return await resolved.catch((error: unknown) => { resolved = undefined; throw error })
  }
}
