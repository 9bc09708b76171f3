import { Type } from 'typebox'
import { ConfigError } from '../config-error.js'
import { checkText, keywords, readSecretFile, variables, type Env, type Variables } from '../variables.js'

/** Mail for account recovery and invitations: the SMTP server, the sender, the links' origin (src/recovery). */
export const MailSchema = Type.Object({
  AUTH_SMTP_URL: Type.Optional(Type.String({ format: 'uri', protocols: ['smtp:', 'smtps:'], docDefault: 'unset: no mail; `/auth/reset` answers 404', description: 'the SMTP server recovery and invitation mail goes through: `smtp://host:587` (STARTTLS when offered) or `smtps://host:465`, credentials in the URL (`smtp://user:pass@host:587`); set it or `AUTH_SMTP_URL_FILE`, not both ([Account recovery](recovery.md))' })),
  AUTH_SMTP_URL_FILE: Type.Optional(Type.String({ description: 'a file holding `AUTH_SMTP_URL` (trimmed; a Docker or Kubernetes secret, for a URL with credentials)' })),
  AUTH_MAIL_FROM: Type.Optional(Type.String({ pattern: '^[^\\r\\n]{3,320}$', expected: 'an address, or a name and an address (`Example Accounts <accounts@example.org>`)', docDefault: 'unset: `no-reply@` and the host of `AUTH_PUBLIC_URL`', description: 'the sender of recovery and invitation mail' })),
  AUTH_PUBLIC_URL: Type.Optional(Type.String({ format: 'uri', protocols: ['http:', 'https:'], docDefault: 'required with `AUTH_SMTP_URL`', description: 'the service\'s public origin as people reach it (`https://auth.example.org`): links in mail are built from it, never from a request\'s `Host` or forwarded headers' })),
  AUTH_RESET_TTL_SECONDS: Type.Integer({ minimum: 300, maximum: 86_400, default: 1800, description: 'how long a password reset link works (an invitation\'s works 7 days)' })
}, { $id: 'mail', title: 'Mail and account recovery', description: 'Password reset and invitation links sent by email ([Account recovery](recovery.md)). Set `AUTH_SMTP_URL` (or `AUTH_SMTP_URL_FILE`) and `AUTH_PUBLIC_URL` together, or neither.' })

export interface MailConfig {
  /** The SMTP server's URL, credentials included: never logged. */
  smtpUrl: string
  from: string
  /** AUTH_PUBLIC_URL without a trailing slash: links are this and a path. */
  publicUrl: string
  resetTtlMs: number
  inviteTtlMs: number
  /** One connection's limit (connect, greeting, each command). */
  timeoutMs: number
  /** The first retry's delay; each next one doubles, up to five minutes. */
  backoffMs: number
  /** How often the idle worker looks for due mail. */
  pollMs: number
}

export interface MailSettings {
  /** Recovery and invitation mail; undefined: none sent, and /auth/reset is 404. */
  mail: MailConfig | undefined
}

export const INVITE_TTL_MS = 7 * 86_400_000

function smtpUrl (vars: Variables<typeof MailSchema.properties>): string | undefined {
  if (vars.given('AUTH_SMTP_URL') && vars.given('AUTH_SMTP_URL_FILE')) throw new ConfigError('AUTH_SMTP_URL_FILE', 'is set together with AUTH_SMTP_URL: set one of them')
  const file = vars.read('AUTH_SMTP_URL_FILE')
  if (file === undefined) return vars.read('AUTH_SMTP_URL')
  const url = readSecretFile('AUTH_SMTP_URL_FILE', file).trim()
  if (url === '') throw new ConfigError('AUTH_SMTP_URL_FILE', `${file} is empty`)
  return checkText('AUTH_SMTP_URL_FILE', keywords(MailSchema.properties.AUTH_SMTP_URL), url)
}

export function readMail (env: Env): MailSettings {
  const vars = variables(MailSchema, env)
  // Every variable is read (and checked) whether mail is on or not: a bad value is refused either way.
  const smtp = smtpUrl(vars)
  const publicUrl = vars.read('AUTH_PUBLIC_URL')
  const from = vars.read('AUTH_MAIL_FROM')
  const resetTtlSeconds = vars.read('AUTH_RESET_TTL_SECONDS')
  if (smtp === undefined) return { mail: undefined }
  if (publicUrl === undefined) throw new ConfigError('AUTH_PUBLIC_URL', 'is required with AUTH_SMTP_URL: the service\'s public origin (https://auth.example.org), which links in mail are built from')
  const base = new URL(publicUrl)
  if (base.search !== '' || base.hash !== '' || base.username !== '' || base.password !== '') throw new ConfigError('AUTH_PUBLIC_URL', 'must be an origin, optionally with a path: no query, fragment or credentials')
  const trimmed = `${base.origin}${base.pathname}`.replace(/\/+$/, '')
  return {
    mail: {
      smtpUrl: smtp,
      from: from ?? `no-reply@${base.hostname}`,
      publicUrl: trimmed,
      resetTtlMs: resetTtlSeconds * 1000,
      inviteTtlMs: INVITE_TTL_MS,
      timeoutMs: 30_000,
      backoffMs: 5000,
      pollMs: 1000
    }
  }
}
