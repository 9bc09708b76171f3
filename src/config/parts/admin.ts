import { Type } from 'typebox'
import { ConfigError } from '../config-error.js'
import { checkText, keywords, readSecretFile, variables, type Env, type Variables } from '../variables.js'

/** Shortest admin key: it manages every account, so it must be as unguessable as the revocation feed's. */
export const MIN_ADMIN_KEY_LENGTH = 32

/** The first account, the admin API's key, and where the command line sends its commands (src/admin, src/cli). */
export const AdminSchema = Type.Object({
  AUTH_BOOTSTRAP_USERNAME: Type.Optional(Type.String({ description: 'create this account at start if it does not exist (with `AUTH_BOOTSTRAP_PASSWORD`: set both or neither); an existing one is left as it is, so a password changed since survives restarts' })),
  // The password is taken as given: spaces are characters of a password.
  AUTH_BOOTSTRAP_PASSWORD: Type.Optional(Type.String({ writeOnly: true, verbatim: true, description: 'that account\'s password (set both or neither), taken as given, spaces included' })),
  AUTH_BOOTSTRAP_RESET: Type.Boolean({ default: false, description: '`true`: give the existing bootstrap account `AUTH_BOOTSTRAP_PASSWORD` again at start, which ends its tokens (at every start while set: set it for one start)' }),
  AUTH_ADMIN_KEY: Type.Optional(Type.String({ writeOnly: true, minLength: MIN_ADMIN_KEY_LENGTH, hint: 'openssl rand -base64 32', docDefault: 'unset: the admin API is off (404), but see [Administration](administration.md#admin-api) for the embedded default', description: 'the admin API\'s key (`Authorization: Bearer`); set it or `AUTH_ADMIN_KEY_FILE`, not both' })),
  AUTH_ADMIN_KEY_FILE: Type.Optional(Type.String({ description: 'a file holding the admin API\'s key (trimmed; a Docker or Kubernetes secret); a file that cannot be read stops the start' })),
  AUTH_ADMIN_URL: Type.Optional(Type.String({ format: 'uri', protocols: ['http:', 'https:'], description: 'for the command line: the internal listener of a running service (`http://127.0.0.1:3001`); its account and session commands then go through the admin API, with `AUTH_ADMIN_KEY` or `AUTH_ADMIN_KEY_FILE`' }))
}, { $id: 'admin', title: 'Administration', description: 'The account made at the first start, the admin API\'s key, and where the command line sends its commands ([Administration](administration.md)).' })

export interface AdminSettings {
  bootstrapUsername: string | undefined
  bootstrapPassword: string | undefined
  /** Give an existing bootstrap account the bootstrap password again (at every start while set). */
  bootstrapReset: boolean
  /** Bearer key of the admin API on the internal listener; undefined: the admin API answers 404 (but see admin/local-access.ts). */
  adminKey: string | undefined
  /** Where the command line sends account commands: the internal listener's base URL. */
  adminUrl: string | undefined
}

/** AUTH_ADMIN_KEY or AUTH_ADMIN_KEY_FILE (a secret mounted as a file), not both; the file's key obeys AUTH_ADMIN_KEY's rules. */
function adminKey (vars: Variables<typeof AdminSchema.properties>): string | undefined {
  if (vars.given('AUTH_ADMIN_KEY') && vars.given('AUTH_ADMIN_KEY_FILE')) throw new ConfigError('AUTH_ADMIN_KEY_FILE', 'is set together with AUTH_ADMIN_KEY: set one of them')
  const file = vars.read('AUTH_ADMIN_KEY_FILE')
  if (file === undefined) return vars.read('AUTH_ADMIN_KEY')
  const key = readSecretFile('AUTH_ADMIN_KEY_FILE', file).trim()
  if (key === '') throw new ConfigError('AUTH_ADMIN_KEY_FILE', `${file} is empty`)
  return checkText('AUTH_ADMIN_KEY_FILE', keywords(AdminSchema.properties.AUTH_ADMIN_KEY), key)
}

export function readAdmin (env: Env): AdminSettings {
  const vars = variables(AdminSchema, env)
  const bootstrapUsername = vars.read('AUTH_BOOTSTRAP_USERNAME')
  const bootstrapPassword = vars.read('AUTH_BOOTSTRAP_PASSWORD')
  if ((bootstrapUsername === undefined) !== (bootstrapPassword === undefined)) {
    throw new ConfigError(bootstrapUsername === undefined ? 'AUTH_BOOTSTRAP_USERNAME' : 'AUTH_BOOTSTRAP_PASSWORD',
      'AUTH_BOOTSTRAP_USERNAME and AUTH_BOOTSTRAP_PASSWORD must be set together')
  }
  const bootstrapReset = vars.read('AUTH_BOOTSTRAP_RESET')
  if (bootstrapReset && bootstrapUsername === undefined) {
    throw new ConfigError('AUTH_BOOTSTRAP_RESET', 'resets the bootstrap account: it needs AUTH_BOOTSTRAP_USERNAME and AUTH_BOOTSTRAP_PASSWORD')
  }
  return {
    bootstrapUsername,
    bootstrapPassword,
    bootstrapReset,
    adminKey: adminKey(vars),
    adminUrl: vars.read('AUTH_ADMIN_URL')
  }
}
