import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { listen, requiredEnv } from './listen.js'

/**
 * The service itself (dist/, production settings, the same env as the service under test, its
 * OpenID Connect provider on at AUTH_OIDC_ISSUER) with one change: every client's ID tokens are
 * signed with BENCH_ID_TOKEN_ALG (`ES256`) instead of the default RS256, as a client registered
 * with `id_token_signed_response_alg` would have them. The service registers no such setting (the
 * contract's clients have none), so the bench sets it on the metadata the provider reads, to
 * measure what the ID token's signature costs the refresh grant.
 */
type AppModule = typeof import('../../src/app/app.js')
type BackendsModule = typeof import('../../src/app/backends.js')
type ConfigModule = typeof import('../../src/config/config.js')

const dist = (path: string): string => pathToFileURL(join(requiredEnv('BENCH_ROOT'), 'dist', path)).href
// From dist/, like the service: one copy of every class (StatusError above all) in the process.
const { buildApp } = await import(dist('app/app.js')) as AppModule
const { openBackends } = await import(dist('app/backends.js')) as BackendsModule
const { loadConfig } = await import(dist('config/config.js')) as ConfigModule

const alg = requiredEnv('BENCH_ID_TOKEN_ALG')
if (alg !== 'ES256' && alg !== 'RS256') throw new Error(`BENCH_ID_TOKEN_ALG: the provider signs with RS256 or ES256, not ${alg}`)
const config = loadConfig()
if (config.oidc === undefined) throw new Error('AUTH_OIDC_ISSUER must be set: this server measures the provider')

const silent = { info: () => {}, warn: () => {}, error: () => {} }
const backends = await openBackends(config, silent)
const app = await buildApp(config, { backends })
// The provider reads a client through this object at each request (src/oidc/service.ts), so the
// metadata it is given from now on names the alg.
const clients = app.oidcClients
const metadataOf = clients.metadataOf.bind(clients)
clients.metadataOf = async (clientId) => {
  const metadata = await metadataOf(clientId)
  if (metadata === undefined) return undefined
  const signed: typeof metadata & { id_token_signed_response_alg: string } = { ...metadata, id_token_signed_response_alg: alg }
  return signed
}
await listen(app, async () => { await backends.close() })
