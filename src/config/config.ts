import type { TObject } from 'typebox'
import { ApiKeysSchema, readApiKeys, type ApiKeySettings } from './parts/api-keys.js'
import { AdminSchema, readAdmin, type AdminSettings } from './parts/admin.js'
import { DatabaseSchema, readDatabase, type DatabaseSettings } from './parts/database.js'
import { FederationSchema, readFederation, type FederationSettings } from './parts/federation.js'
import { checkHttp, HttpSchema, readHttp, type HttpSettings } from './parts/http.js'
import { LimitsSchema, readLimits, type LimitSettings } from './parts/limits.js'
import { checkListeners, ListenersSchema, readListeners, type ListenerSettings } from './parts/listeners.js'
import { LoggingSchema, readLogging, type LoggingSettings } from './parts/logging.js'
import { PasswordsSchema, readPasswords, type PasswordSettings } from './parts/passwords.js'
import { checkRedis, readRedis, RedisSchema, type RedisSettings } from './parts/redis.js'
import { checkSignIn, readSignIn, SignInSchema, type SignInSettings } from './parts/sign-in.js'
import { readTokens, TokensSchema, type TokenSettings } from './parts/tokens.js'
import { readTotp, TotpSchema, type TotpSettings } from './parts/totp.js'
import { readWebhooks, WebhooksSchema, type WebhookSettings } from './parts/webhooks.js'
import { OidcSchema, readOidc, type OidcSettings } from './parts/oidc.js'
import { ConsoleSchema, readConsole, type ConsoleSettings } from './parts/console.js'
import { MailSchema, readMail, type MailSettings } from './parts/mail.js'
import type { Env } from './variables.js'

export { ConfigError } from './config-error.js'
export { defaultHashConcurrency } from './parts/passwords.js'

/**
 * Every setting of the service, read once at start. Precedence: explicit override, then
 * environment, then default. A bad value stops the start with one line naming the variable
 * (ConfigError); nothing here knows Fastify or any feature.
 *
 * Each part declares its variables once (parts/*.ts: type, default, bounds, description), and
 * docs/configuration.md is generated from those declarations (`npm run docs:config`). A slice
 * takes its own part's settings (e.g. WebhookSettings, TotpSettings), not the whole Config; the
 * composition root (src/app) holds the whole.
 */
export type Config =
  ListenerSettings & HttpSettings & DatabaseSettings & RedisSettings & TokenSettings & LimitSettings &
  PasswordSettings & AdminSettings & ApiKeySettings & TotpSettings & SignInSettings & WebhookSettings &
  FederationSettings & LoggingSettings & OidcSettings & ConsoleSettings & MailSettings

/** The parts in the order the configuration page shows them. */
export const SETTINGS_PARTS: readonly TObject[] = [
  ListenersSchema, DatabaseSchema, RedisSchema, TokensSchema, LimitsSchema, PasswordsSchema, HttpSchema,
  AdminSchema, ApiKeysSchema, TotpSchema, SignInSchema, ConsoleSchema, MailSchema, OidcSchema, WebhooksSchema, FederationSchema, LoggingSchema
]

export function loadConfig (env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const config: Config = {
    ...readLogging(env),
    ...readAdmin(env),
    ...readLimits(env),
    ...readListeners(env),
    ...readDatabase(env),
    ...readRedis(env),
    ...readTokens(env),
    ...readApiKeys(env),
    ...readHttp(env),
    ...readPasswords(env),
    ...readWebhooks(env),
    ...readFederation(env),
    ...readSignIn(env),
    ...readTotp(env),
    ...readOidc(env),
    ...readConsole(env),
    ...readMail(env),
    ...overrides
  }
  // What spans variables is checked on the settings as they will be used, a caller's overrides included.
  checkListeners(config)
  checkRedis(config)
  checkHttp(config)
  checkSignIn(config)
  return config
}
