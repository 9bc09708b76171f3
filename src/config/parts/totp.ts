import { Type } from 'typebox'
import { ConfigError } from '../config-error.js'
import { checkText, readSecretFile, refusal, variables, type Env } from '../variables.js'

/** A sealing key's declaration, shared by the current key and the previous ones. */
const SEALING_KEY = { writeOnly: true, pattern: '^[A-Za-z0-9+/]+={0,2}$', expected: '32 bytes in base64 (openssl rand -base64 32)' }

/** The key that seals TOTP secrets, its predecessors, and the name authenticator apps show (src/totp). */
export const TotpSchema = Type.Object({
  AUTH_TOTP_KEY: Type.Optional(Type.String({ ...SEALING_KEY, docDefault: 'unset: `totp.key` (0600) made in `AUTH_DATA_DIR` at first use', description: 'the key TOTP secrets are sealed with; set it or `AUTH_TOTP_KEY_FILE`, not both ([second factor](second-factor.md#the-secret-at-rest-and-key-rotation))' })),
  AUTH_TOTP_KEY_FILE: Type.Optional(Type.String({ description: 'a file holding that key (a Docker or Kubernetes secret)' })),
  AUTH_TOTP_PREVIOUS_KEYS: Type.Array(Type.String(SEALING_KEY), { default: [], description: 'keys of before a rotation: they open old secrets, sealed again with the current key when used' }),
  AUTH_TOTP_ISSUER: Type.String({ default: 'auth-token-service', description: 'the issuer authenticator apps show beside the account name' })
}, { $id: 'totp', title: 'Second factor (TOTP)', description: 'The one-time codes of authenticator apps ([second factor](second-factor.md)).' })

export interface TotpSettings {
  /** The key TOTP secrets are sealed with; undefined: a key file the service makes in dataDir at first use (totp/key-file.ts). */
  totpKey: Buffer | undefined
  /** Keys of before a rotation: they open old secrets, which are then sealed again with totpKey. */
  totpPreviousKeys: Buffer[]
  /** The issuer authenticator apps show. */
  totpIssuer: string
}

/** Base64 of exactly 32 bytes, or the ConfigError naming `name`; the value is a secret: the message never repeats it. */
function sealingKey (name: string, text: string): Buffer {
  const key = Buffer.from(checkText(name, SEALING_KEY, text.trim()), 'base64')
  if (key.length !== 32) throw refusal(name, SEALING_KEY, '')
  return key
}

export function readTotp (env: Env): TotpSettings {
  const vars = variables(TotpSchema, env)
  if (vars.given('AUTH_TOTP_KEY') && vars.given('AUTH_TOTP_KEY_FILE')) throw new ConfigError('AUTH_TOTP_KEY_FILE', 'is set together with AUTH_TOTP_KEY: set one of them')
  const direct = vars.read('AUTH_TOTP_KEY')
  const file = vars.read('AUTH_TOTP_KEY_FILE')
  return {
    totpKey: direct !== undefined
      ? sealingKey('AUTH_TOTP_KEY', direct)
      : file === undefined ? undefined : sealingKey('AUTH_TOTP_KEY_FILE', readSecretFile('AUTH_TOTP_KEY_FILE', file)),
    totpPreviousKeys: vars.read('AUTH_TOTP_PREVIOUS_KEYS').map((entry) => sealingKey('AUTH_TOTP_PREVIOUS_KEYS', entry)),
    totpIssuer: vars.read('AUTH_TOTP_ISSUER')
  }
}
