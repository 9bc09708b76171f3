import { Type } from 'typebox'
import { ConfigError } from '../config-error.js'
import { variables, type Env } from '../variables.js'

const DAY = 24 * 60 * 60

/** How many failed logins lock an account or slow a client, and what a client may ask before signing in (the login limiter, src/core). */
export const LimitsSchema = Type.Object({
  AUTH_MAX_FAILED_LOGINS: Type.Integer({ minimum: 1, maximum: 100, default: 10, description: 'consecutive failures that lock an account' }),
  AUTH_LOCKOUT_SECONDS: Type.Integer({ minimum: 1, maximum: DAY, default: 60, description: 'the first lock; each next one doubles' }),
  AUTH_MAX_LOCKOUT_SECONDS: Type.Integer({ minimum: 1, maximum: 30 * DAY, default: 900, description: 'the longest lock; at least `AUTH_LOCKOUT_SECONDS`' }),
  AUTH_MAX_FAILED_LOGINS_PER_IP: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 100, description: 'failed logins one client IP may make per window' }),
  AUTH_IP_WINDOW_SECONDS: Type.Integer({ minimum: 1, maximum: DAY, default: 900, description: 'the window of `AUTH_MAX_FAILED_LOGINS_PER_IP`' }),
  AUTH_PRESIGNIN_REQUESTS_PER_IP: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 30, description: 'requests one client IP (an IPv6 client: its /64) may make per window to each route anyone may call before signing in (passkey options, a passkey\'s answer, the code step); past it 429 with `Retry-After` ([Browser sign-in](browser-sign-in.md#limits-before-sign-in))' }),
  AUTH_PRESIGNIN_WINDOW_SECONDS: Type.Integer({ minimum: 1, maximum: DAY, default: 60, description: 'the window of `AUTH_PRESIGNIN_REQUESTS_PER_IP`' })
}, { $id: 'limits', title: 'Login limits', description: 'Failed logins lock the account (doubling each time) and slow the client IP; the routes anyone may call before signing in have a limit per client.' })

export interface LimitSettings {
  maxFailedLogins: number
  lockoutSeconds: number
  maxLockoutSeconds: number
  maxFailedLoginsPerIp: number
  ipWindowSeconds: number
  /** Requests one client (an address; an IPv6 /64) may make per window to each route anyone may call before signing in. */
  preSignInRequestsPerIp: number
  preSignInWindowSeconds: number
}

export function readLimits (env: Env): LimitSettings {
  const vars = variables(LimitsSchema, env)
  const lockoutSeconds = vars.read('AUTH_LOCKOUT_SECONDS')
  const maxLockoutSeconds = vars.read('AUTH_MAX_LOCKOUT_SECONDS')
  if (maxLockoutSeconds < lockoutSeconds) {
    throw new ConfigError('AUTH_MAX_LOCKOUT_SECONDS', `must be at least AUTH_LOCKOUT_SECONDS (${lockoutSeconds})`)
  }
  return {
    maxFailedLogins: vars.read('AUTH_MAX_FAILED_LOGINS'),
    lockoutSeconds,
    maxLockoutSeconds,
    maxFailedLoginsPerIp: vars.read('AUTH_MAX_FAILED_LOGINS_PER_IP'),
    ipWindowSeconds: vars.read('AUTH_IP_WINDOW_SECONDS'),
    // 30 a minute: a person signing in makes a few; a script, thousands (one stored challenge each).
    preSignInRequestsPerIp: vars.read('AUTH_PRESIGNIN_REQUESTS_PER_IP'),
    preSignInWindowSeconds: vars.read('AUTH_PRESIGNIN_WINDOW_SECONDS')
  }
}
