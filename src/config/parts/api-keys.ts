import { Type } from 'typebox'
import { variables, type Env } from '../variables.js'

/** How long an API key may live and how many one account may hold (src/api-keys). */
export const ApiKeysSchema = Type.Object({
  AUTH_API_KEY_MAX_DAYS: Type.Integer({ minimum: 1, maximum: 3650, default: 365, description: 'the longest life an API key may be given, in days; a key\'s default is 90 days, or this when smaller ([machine credentials](machine-credentials.md))' }),
  // Bounds what a revoke-all or disable must end in one step, and what one account may own.
  AUTH_API_KEYS_PER_ACCOUNT: Type.Integer({ minimum: 1, maximum: 10_000, default: 50, description: 'the most live (not ended, not expired) API keys one account may hold; one more is a 400 with `detail` ([machine credentials](machine-credentials.md#how-many-keys))' })
}, { $id: 'api-keys', title: 'API keys', description: 'Keys for machines and scripts ([machine credentials](machine-credentials.md)).' })

export interface ApiKeySettings {
  apiKeyMaxDays: number
  apiKeysPerAccount: number
}

export function readApiKeys (env: Env): ApiKeySettings {
  const vars = variables(ApiKeysSchema, env)
  return { apiKeyMaxDays: vars.read('AUTH_API_KEY_MAX_DAYS'), apiKeysPerAccount: vars.read('AUTH_API_KEYS_PER_ACCOUNT') }
}
