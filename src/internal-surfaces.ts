import type { Config } from './config.js'

/**
 * Where the internal surfaces (/metrics, /docs, /openapi.json, /auth/revocations) are served
 * (issue 19 §4): always on the internal listener (internal-listener.ts); on the public port
 * too outside production only, for a first run.
 */
export function publicServesInternals (config: Pick<Config, 'nodeEnv'>): boolean {
  return config.nodeEnv !== 'production'
}

/** Whether the revocation feed answers without a key: only outside production, and only while none is set. */
export function revocationsOpen (config: Pick<Config, 'nodeEnv' | 'revocationsKey'>): boolean {
  return config.revocationsKey === undefined && config.nodeEnv !== 'production'
}
