import type { ListenerSettings } from '../config/parts/listeners.js'
import type { TokenSettings } from '../config/parts/tokens.js'
import { loopbackOnly } from '../http/allowed-hosts.js'

/**
 * Where the internal surfaces (/metrics, /docs, /openapi.json, /auth/revocations) are served:
 * always on the internal listener (internal-listener.ts); on the public port only when
 * AUTH_PUBLIC_INTERNALS asks for it. NODE_ENV decides nothing here.
 */
export function publicServesInternals (config: Pick<ListenerSettings, 'publicInternals'>): boolean {
  return config.publicInternals
}

/**
 * Whether the revocation feed answers without a key on a listener bound to `boundHost`: only
 * while no key is set and only on a listener this machine alone reaches (the internal
 * listener's 127.0.0.1 default, for a first run). Anywhere else, no key is no feed (404).
 */
export function revocationsOpen (config: Pick<TokenSettings, 'revocationsKey'>, boundHost: string): boolean {
  return config.revocationsKey === undefined && loopbackOnly(boundHost)
}
